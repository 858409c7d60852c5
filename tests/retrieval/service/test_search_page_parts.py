"""The search page is assembled from package data files (page/search.html, .css, .js) into one
self-contained document whose inline parts are exactly what its CSP hashes allow, with a ranking
control built from the search modes (hybrid, the CLI's default, selected)."""

from __future__ import annotations

import base64
import hashlib
import re
from importlib import resources
from pathlib import Path

import tomllib

from jaxparadigm.retrieval.search_options import MODES, SearchOptions
from jaxparadigm.retrieval.service.search_page import (
    PAGE_CSP,
    PAGE_SCRIPT,
    PAGE_STYLE,
    SEARCH_PAGE,
)

ROOT = Path(__file__).resolve().parents[3]
PARTS = ("search.html", "search.css", "search.js")


def _file(name: str) -> str:
    page = resources.files("jaxparadigm.retrieval.service") / "page" / name
    return page.read_text(encoding="utf-8")


def _hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def test_the_page_is_its_three_data_files_in_one_document():
    assert PAGE_STYLE == _file("search.css") and PAGE_SCRIPT == _file("search.js")
    inline = re.findall(r"<style>(.*?)</style>|<script>(.*?)</script>", SEARCH_PAGE, re.S)
    assert [s or j for s, j in inline] == [PAGE_STYLE, PAGE_SCRIPT]
    template = _file("search.html")
    for part in ("$style", "$script", "$modes"):
        assert template.count(part) == 1 and part not in SEARCH_PAGE
    head, tail = template.split("$style")[0], template.split("$script")[1]
    assert SEARCH_PAGE.startswith(head) and SEARCH_PAGE.endswith(tail)  # the template's own text


def test_the_csp_allows_exactly_the_inline_style_and_script():
    assert f"script-src {_hash(PAGE_SCRIPT)};" in PAGE_CSP
    assert f"style-src {_hash(PAGE_STYLE)};" in PAGE_CSP
    assert "default-src 'none'" in PAGE_CSP and "connect-src 'self'" in PAGE_CSP
    for outside in ("http://", "https://", "src=", "href=", "@import", "url("):
        assert outside not in SEARCH_PAGE, outside  # nothing is fetched from elsewhere


def test_the_ranking_control_offers_every_mode_and_selects_the_default():
    control = re.search(r'<select id="mode">(.*?)</select>', SEARCH_PAGE).group(1)
    options = re.findall(r'<option value="(\w+)"( selected)?>(\w+)</option>', control)
    assert [(v, t) for v, _, t in options] == [(m, m) for m in MODES]
    assert [v for v, sel, _ in options if sel] == [SearchOptions().mode] == ["hybrid"]
    assert '<label for="mode"' in SEARCH_PAGE
    # the request the page posts carries the control's value as "mode"
    assert re.search(r"mode: modeSelect\.value", PAGE_SCRIPT)
    assert 'const modeSelect = document.getElementById("mode");' in PAGE_SCRIPT


def test_a_wheel_carries_the_page_files():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    data = config["tool"]["setuptools"]["package-data"]["jaxparadigm.retrieval.service"]
    assert sorted(data) == sorted(f"page/{p}" for p in PARTS)
    folder = ROOT / "jaxparadigm" / "retrieval" / "service" / "page"
    assert sorted(p.name for p in folder.iterdir()) == sorted(PARTS)
