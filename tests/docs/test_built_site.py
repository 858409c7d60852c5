"""Checks on the built site (issue 16), run by ``make docs-check`` after the build.

The site is built with every notebook executed; these tests open the HTML: each tutorial page has
at least one embedded picture among its cell outputs, no error or stderr output, and the closing
verdict table rendered from the ledger; the claims report holds every claim ID with its verdict and
its figures; the API pages render every public name. ``make docs-check`` sets
``JAXPARADIGM_DOCS_HTML`` to the built HTML; without it these tests skip (the default test run
does not build the site).
"""

from __future__ import annotations

import importlib
import inspect
import os
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from tests.docs.api_pages import directives, public_names

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
TUTORIALS = sorted((DOCS / "tutorials").glob("*.md"))
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
BAD_OUTPUT = ("traceback", "stderr", "error")

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def html_dir() -> Path:
    where = os.environ.get("JAXPARADIGM_DOCS_HTML")
    if not where:
        pytest.skip(
            "JAXPARADIGM_DOCS_HTML is not set: `make docs-check` builds the site and runs this"
        )
    path = Path(where)
    assert (path / "index.html").is_file(), f"JAXPARADIGM_DOCS_HTML={where}: no index.html there"
    return path


class Page(HTMLParser):
    """What a built page shows: images inside cell outputs, output kinds, ids, verdict spans."""

    def __init__(self, path: Path):
        super().__init__()
        self.path = path
        self.stack: list[str] = []  # classes of the open divs
        self.output_images: list[str] = []
        self.output_kinds: list[str] = []
        self.ids: set[str] = set()
        self.verdicts: list[str] = []
        self.text: list[str] = []
        self.feed(path.read_text(encoding="utf-8"))

    def in_output(self) -> bool:
        return any("cell_output" in c for c in self.stack)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "id" in a:
            self.ids.add(a["id"])
        cls = a.get("class") or ""
        if tag == "div":
            self.stack.append(cls)
            if self.in_output() and cls.split()[:1] == ["output"]:
                self.output_kinds.append(cls)
        if tag == "img" and self.in_output():
            self.output_images.append(a.get("src", ""))
        if tag == "span" and cls.startswith("verdict-"):
            self.verdicts.append(cls.removeprefix("verdict-"))

    def handle_endtag(self, tag):
        if tag == "div" and self.stack:
            self.stack.pop()

    def handle_data(self, data):
        self.text.append(data)


def built(html_dir: Path, source: Path) -> Page:
    page = html_dir / source.relative_to(DOCS).with_suffix(".html")
    assert page.is_file(), f"{source.relative_to(ROOT)} was not built into {page}"
    return Page(page)


def assert_clean_outputs(page: Page) -> None:
    bad = [k for k in page.output_kinds if any(word in k.split() for word in BAD_OUTPUT)]
    assert not bad, f"{page.path.name}: error/stderr outputs {bad}"
    assert page.output_kinds, f"{page.path.name}: no executed outputs at all"


def assert_images(page: Page, at_least: int = 1) -> None:
    assert len(page.output_images) >= at_least, (
        f"{page.path.name}: {len(page.output_images)} images in cell outputs, expected >= {at_least}"
    )
    for src in page.output_images:
        image = (page.path.parent / src).resolve()
        assert image.is_file(), f"{page.path.name}: image {src} missing"
        assert image.read_bytes()[:8] == PNG_MAGIC, f"{page.path.name}: {src} is not a PNG"


def test_there_are_tutorials():
    assert len(TUTORIALS) >= 2, TUTORIALS


@pytest.mark.parametrize("source", TUTORIALS, ids=lambda p: p.stem)
def test_tutorial_page_has_pictures_no_errors_and_its_verdicts(html_dir, source):
    page = built(html_dir, source)
    assert_clean_outputs(page)
    assert_images(page)
    assert page.verdicts, f"{source.name}: no verdict rendered from the ledger"
    assert set(page.verdicts) <= {"holds", "fails", "conditional"}
    claimed = re.findall(r"verdict_table\(\[([^\]]*)\]\)", source.read_text(encoding="utf-8"))
    assert claimed, f"{source.name}: does not end with verdict_table([...])"
    ids = re.findall(r'"(C\d+\.\d+)"', claimed[-1])
    assert len(page.verdicts) == len(ids), f"{source.name}: {ids} but {page.verdicts} rendered"


def test_claims_report_page_has_every_claim_and_its_figures(html_dir):
    from jaxparadigm.claims import experiments

    page = built(html_dir, DOCS / "claims_report.md")
    assert_clean_outputs(page)
    assert_images(page, at_least=1)
    text = "".join(page.text)
    for claim_id in experiments():
        assert re.search(rf"{re.escape(claim_id)}: (holds|fails|conditional)", text), claim_id
    # the verdict table (one row per claim) plus the per-claim sections
    assert len(page.verdicts) == len(experiments())


def test_from_pytorch_page_is_built(html_dir):
    page = built(html_dir, DOCS / "from_pytorch.md")
    text = "".join(page.text)
    assert "What bites" in text and "clip_grad_norm_" in text


@pytest.mark.parametrize("module_name", sorted(directives()))
def test_api_page_renders_every_public_name(html_dir, module_name):
    pages = [
        p for p in (DOCS / "api").glob("*.rst") if f"automodule:: {module_name}\n" in p.read_text()
    ]
    page = built(html_dir, pages[0])
    module = importlib.import_module(module_name)
    names = [n for n in public_names(module) if not inspect.ismodule(getattr(module, n))]
    missing = [n for n in names if f"{module_name}.{n}" not in page.ids]
    assert not missing, f"{pages[0].name}: autodoc rendered no entry for {missing}"


def sphinx_warnings(html_dir: Path) -> list[str]:
    log = html_dir.parent / "sphinx-warnings.txt"
    assert log.is_file(), f"{log}: missing (make docs-check writes it with sphinx-build -w)"
    return [
        line
        for line in log.read_text(encoding="utf-8").splitlines()
        if "WARNING" in line or "ERROR" in line
    ]


def test_no_warnings_from_the_site_sources(html_dir):
    """Pages, notebooks and the configuration build without a warning (docstrings: next test)."""
    own = [w for w in sphinx_warnings(html_dir) if "docstring of" not in w]
    assert not own, "\n".join(own)


@pytest.mark.xfail(
    strict=True,
    reason="docstrings of jaxparadigm/autodiff/tape.py (emphasis) and jaxparadigm/retrieval/"
    "evaluation.py (|dot - cosine| read as a substitution) give autodoc warnings; their modules "
    "were being edited by other engineers during round 1 of issue 16",
)
def test_no_docstring_warnings(html_dir):
    warnings = [w for w in sphinx_warnings(html_dir) if "docstring of" in w]
    assert not warnings, "\n".join(warnings)
