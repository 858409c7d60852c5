"""The search page in a real browser (issue 35 item 4): headless Chromium from the system's packages
driven by Playwright for Python. Keyboard only: the box has the focus on load, a query typed and
Enter lists the JSON API's rows in rank order (``data-row``), each with its file, offsets, score
and marked excerpt; an empty query and refused or unanswered searches are readable messages; no
request leaves 127.0.0.1. Skips without Playwright (``pip install -e '.[browser]'``) or Chromium
(``apt-get install chromium``); ``make oracles`` installs both.

Run as a script, it writes the docs' screenshot over an index of README.md built with MiniLM:
``python tests/retrieval/service/test_search_page_browser.py docs/_static/search_page.png``.
"""

from __future__ import annotations

import json
import shutil
import sys
import urllib.request
from pathlib import Path
from urllib.parse import urlparse

import pytest

from jaxparadigm.retrieval.ranking.excerpt import query_words

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
]
QUERY = "how do I open a file for reading"

pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="no chromium on PATH (apt-get install chromium; make oracles)"
)


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="playwright not installed (pip install -e '.[browser]')"
    )
    with sync_api.sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        yield chromium
        chromium.close()


@pytest.fixture
def service(tmp_path, minilm_tokenizer):
    from tests.retrieval.service.hash_service import hash_service

    svc = hash_service(tmp_path, minilm_tokenizer)
    yield svc
    svc.stop()


class _Watched:
    """A page whose every request is logged; one for a host other than 127.0.0.1 is aborted
    (and logged in ``outside``)."""

    def __init__(self, browser):
        self.page = browser.new_page(viewport={"width": 1000, "height": 760})
        self.requests: list[str] = []
        self.outside: list[str] = []
        self.bodies: list[dict] = []  # the JSON bodies the page posted to /search
        self.page.route("**/*", self._route)

    def _route(self, route) -> None:
        url = route.request.url
        self.requests.append(url)
        if url.endswith("/search") and route.request.post_data:
            self.bodies.append(json.loads(route.request.post_data))
        if urlparse(url).hostname == "127.0.0.1":
            route.continue_()
        else:
            self.outside.append(url)
            route.abort()

    def rows(self) -> list[int]:
        return self.page.eval_on_selector_all(
            "#results li.hit", "els => els.map(e => Number(e.dataset.row))"
        )

    def status(self) -> str:
        return self.page.inner_text("#status")


def _api(url: str, query: str, k: int, mode: str = "hybrid") -> dict:
    body = json.dumps({"query": query, "k": k, "mode": mode}).encode()
    with urllib.request.urlopen(urllib.request.Request(url, data=body), timeout=30) as resp:
        return json.loads(resp.read())


def _search_by_keyboard(watched: _Watched, query: str) -> None:
    page = watched.page
    assert page.evaluate("document.activeElement.id") == "q"  # focused on load, no click
    page.keyboard.type(query)
    page.keyboard.press("Enter")
    page.locator("#status", has_text="result(s) for").wait_for()  # (the page's CSP forbids eval)


def test_a_typed_query_lists_the_api_rows_with_file_offsets_score_and_marks(
    browser, service, tmp_path
):
    watched = _Watched(browser)
    page = watched.page
    page.goto(service.url.removesuffix("search"))
    _search_by_keyboard(watched, QUERY)
    api = _api(service.url, QUERY, 10)  # the page asks for 10 by default, ranked hybrid
    assert watched.bodies == [{"query": QUERY, "k": 10, "mode": "hybrid", "excerpts": True}]
    assert watched.rows() == [row for row, _ in api["hits"]] and len(api["hits"]) > 1
    metas = page.eval_on_selector_all("#results li.hit .meta", "els => els.map(e => e.textContent)")
    for meta, (_, score), p in zip(metas, api["hits"], api["passages"], strict=True):
        assert meta == f"{p['source']} [{p['start']}:{p['end']}]score {score:.4f}"
    marked = page.eval_on_selector_all("#results mark", "els => els.map(e => e.textContent)")
    assert marked and all(m.casefold() in query_words(QUERY) for m in marked)
    assert "open" in {m.casefold() for m in marked}  # files.md: "To open a file for reading"
    assert watched.status() == f"{len(api['hits'])} result(s) for \u201c{QUERY}\u201d, best first."

    # keyboard only: Tab walks k, the ranking, the button and the results in rank order; / returns
    for _ in range(4):
        page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.dataset.row") == str(api["hits"][0][0])
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.dataset.row") == str(api["hits"][1][0])
    page.keyboard.press("/")
    assert page.evaluate("document.activeElement.id") == "q"

    page.screenshot(path=str(tmp_path / "page.png"), full_page=True)
    assert (tmp_path / "page.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert watched.outside == [] and watched.requests  # nothing left 127.0.0.1
    assert {urlparse(u).hostname for u in watched.requests} == {"127.0.0.1"}


def test_the_ranking_control_defaults_to_hybrid_and_sends_the_mode_chosen(browser, service):
    """The page's default request ranks hybrid (as search --index); choosing dense sends
    "mode": "dense" and lists the dense rows, which differ from the hybrid ones here."""
    watched = _Watched(browser)
    page = watched.page
    page.goto(service.url.removesuffix("search"))
    options = page.eval_on_selector_all("#mode option", "els => els.map(e => e.value)")
    assert options == ["hybrid", "dense"] and page.input_value("#mode") == "hybrid"
    _search_by_keyboard(watched, QUERY)
    hybrid = [row for row, _ in _api(service.url, QUERY, 10, "hybrid")["hits"]]
    dense = [row for row, _ in _api(service.url, QUERY, 10, "dense")["hits"]]
    assert watched.rows() == hybrid != dense  # the rankings differ: the test can tell them apart
    page.select_option("#mode", "dense")
    page.press("#q", "Enter")
    for _ in range(200):  # the answer replaces the list (the page's CSP forbids wait_for_function)
        if watched.rows() != hybrid:
            break
        page.wait_for_timeout(50)
    assert watched.rows() == dense
    assert [b["mode"] for b in watched.bodies] == ["hybrid", "dense"]


def test_an_empty_query_is_a_message_and_sends_nothing(browser, service):
    watched = _Watched(browser)
    watched.page.goto(service.url.removesuffix("search"))
    watched.page.keyboard.type("   ")
    watched.page.keyboard.press("Enter")
    assert watched.status() == "Type a question first: the query is empty."
    assert watched.rows() == [] and not any(u.endswith("/search") for u in watched.requests)


def test_a_refused_search_and_a_stopped_server_are_readable_messages(browser, service):
    watched = _Watched(browser)
    page = watched.page
    page.goto(service.url.removesuffix("search"))
    page.fill("#q", "open " * 14_000)  # a body over the 64 KiB limit: the server answers 413
    page.press("#q", "Enter")
    page.wait_for_selector("#status.error")
    assert watched.status().startswith("The server refused the search (HTTP 413): body: ")
    assert "expected at most 65536" in watched.status() and watched.rows() == []
    service.stop()
    page.fill("#q", "open a file")
    page.press("#q", "Enter")
    page.locator("#status", has_text="did not answer").wait_for()
    assert watched.status().startswith("The server did not answer (")
    assert watched.status().endswith("Is jaxparadigm serve still running?")
    assert watched.outside == []


UNICODE_DOCS = {
    "photo\u202egpj.txt": "\U0001f389\U0001f389 The failure log shows why the job stopped.",
    "notes.md": "\U0001f44dfailure: read the log \U0001f44d then retry the failed log upload.",
}


def test_marks_count_code_points_and_file_names_are_bidi_isolated(
    browser, tmp_path, minilm_tokenizer
):
    """Issue 47: the server's marks are code-point offsets; the page sliced UTF-16 units, so an
    emoji before a query word marked the wrong characters ("ure log") or half an emoji. A file
    named with U+202E showed a fake name and extension ("phototxt.jpg")."""
    from tests.retrieval.service.hash_service import hash_service

    svc = hash_service(tmp_path, minilm_tokenizer, UNICODE_DOCS)
    try:
        watched = _Watched(browser)
        page = watched.page
        page.goto(svc.url.removesuffix("search"))
        _search_by_keyboard(watched, "failure log")
        api = json.loads(_post_excerpts(svc.url, "failure log"))  # the page's own request
        assert watched.rows() == [row for row, _ in api["hits"]]
        hits = page.query_selector_all("#results li.hit")
        assert len(hits) == len(api["passages"]) == 2
        for hit, p in zip(hits, api["passages"], strict=True):
            ex = p["excerpt"]  # the oracle: Python slices code points
            want = [ex["text"][s - ex["start"] : e - ex["start"]] for s, e in ex["marks"]]
            got = hit.eval_on_selector_all("mark", "els => els.map(e => e.textContent)")
            assert got == want and {w.casefold() for w in want} == {"failure", "log"}
            assert hit.eval_on_selector(".excerpt", "e => e.textContent") == ex["text"]
            name = hit.eval_on_selector(".meta .source", "e => [e.tagName, e.textContent]")
            assert name == ["BDI", p["source"].replace("\u202e", "\\u202e")]
            meta = hit.eval_on_selector(".meta", "e => e.textContent")
            assert "\u202e" not in meta and meta.startswith(name[1] + f" [{p['start']}:")
        assert any(
            "photo\\u202egpj.txt" in n
            for n in page.eval_on_selector_all(".source", "els => els.map(e => e.textContent)")
        )
    finally:
        svc.stop()


def _post_excerpts(url: str, query: str) -> bytes:
    body = json.dumps({"query": query, "k": 10, "mode": "hybrid", "excerpts": True}).encode()
    with urllib.request.urlopen(urllib.request.Request(url, data=body), timeout=30) as resp:
        return resp.read()


def _docs_screenshot(path: str) -> None:
    """The docs' picture: README.md indexed with MiniLM, served, a query typed, the page shot."""
    import tempfile

    from playwright.sync_api import sync_playwright

    from jaxparadigm.retrieval.encoder.sentence_encoder import cached_minilm
    from jaxparadigm.retrieval.index.build import build_index
    from jaxparadigm.retrieval.service.index_service import index_service

    root = Path(__file__).resolve().parents[3]
    encoder = cached_minilm(None)
    with tempfile.TemporaryDirectory() as tmp:
        build_index([root / "README.md"], Path(tmp) / "idx", encoder, chunk_tokens=64, overlap=16)
        with index_service(Path(tmp) / "idx", encoder=encoder) as svc, sync_playwright() as pw:
            chromium = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
            page = chromium.new_page(viewport={"width": 1000, "height": 900})
            page.goto(svc.url.removesuffix("search"))
            page.keyboard.type("keep the model loaded and answer many queries")
            page.keyboard.press("Enter")
            page.wait_for_selector("#results li.hit")
            page.select_option("#k", "5")
            page.press("#q", "Enter")
            page.wait_for_timeout(500)
            page.screenshot(path=path, full_page=True)
            chromium.close()
    print(f"wrote {path}")


if __name__ == "__main__":
    _docs_screenshot(sys.argv[1])
