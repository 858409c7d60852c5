"""The page ``jaxparadigm serve`` answers at ``GET /``: one self-contained HTML document (C5.2).

No external script, font, stylesheet or image: the page is :data:`SEARCH_PAGE` alone and works
offline. Its parts are package data files, ``page/search.html``, ``page/search.css`` and
``page/search.js`` beside this module (read with :mod:`importlib.resources`), assembled here into
the one document: the stylesheet and the script inline, and the ranking control's options from
:data:`~jaxparadigm.retrieval.search_options.MODES` (the default, ``SearchOptions().mode``,
selected). It is served with :data:`PAGE_CSP`, a Content-Security-Policy that lets the browser
run only this page's own script and style (by their SHA-256) and connect only to the server that
sent it, so the page cannot make a request that leaves it.

What it does: the search box has the keyboard focus on load (``/`` brings it back from anywhere);
Enter posts ``{"query": ..., "k": ..., "mode": ..., "excerpts": true}`` to ``/search`` (the JSON
API, the same hits as any other client; ``mode`` from the ranking control, hybrid by default as
``search --index``) and lists the hits in rank order. Each result is an
``<li class="hit" data-row="ROW" tabindex="0">`` showing the file, the passage's character offsets
in it ``[start:end]``, the score (4 decimals: the fused reciprocal-rank score in mode hybrid, the
cosine in mode dense) and the excerpt the server chose with
:func:`~jaxparadigm.retrieval.ranking.excerpt.best_excerpt` -- the passage's segment holding the
most distinct query words -- with those words in ``<mark>`` (the server's marks, so the page shows
what was scored; no second matcher in JavaScript). The marks are code-point offsets, as every offset
of the API; the page cuts the excerpt by code points (``Array.from``), never by the UTF-16 units a
JavaScript string counts, so an emoji before a word moves no mark. The file name is shown in a
``<bdi>`` (isolated from the offsets and score after it) with its bidi formatting characters
(U+202E ...) written ``\\u202e``: a name cannot show a fake name or extension. A service without
passages (over a :class:`~jaxparadigm.retrieval.index.memory_index.SemanticIndex`) shows each hit's
row and score. An empty query is answered on the page ("Type a question first ...") without a
request; a refused request shows the server's ``error`` message and status; an unreachable server
says so. Text is inserted with ``textContent`` only (never parsed as HTML), so a passage cannot
inject markup.
"""

from __future__ import annotations

import base64
import hashlib
import html
import string
from importlib import resources

from jaxparadigm.retrieval.search_options import MODES, SearchOptions

__all__ = ["PAGE_CSP", "PAGE_SCRIPT", "PAGE_STYLE", "SEARCH_PAGE"]


def _part(name: str) -> str:
    """The text of ``page/NAME``, a package data file beside this module."""
    page = resources.files("jaxparadigm.retrieval.service") / "page" / name
    return page.read_text(encoding="utf-8")


def _mode_options() -> str:
    """The ranking control's ``<option>`` s: each mode, the default selected."""
    default = SearchOptions().mode
    return "".join(
        f'<option value="{html.escape(m)}"{" selected" * (m == default)}>{html.escape(m)}</option>'
        for m in MODES
    )


#: the page's stylesheet (inline; its SHA-256 is in :data:`PAGE_CSP`)
PAGE_STYLE = _part("search.css")
#: the page's script (inline; its SHA-256 is in :data:`PAGE_CSP`)
PAGE_SCRIPT = _part("search.js")
#: the whole page ``GET /`` answers (HTML; no outside resource)
SEARCH_PAGE = string.Template(_part("search.html")).substitute(
    style=PAGE_STYLE, script=PAGE_SCRIPT, modes=_mode_options()
)


def _sha256(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


#: only this page's script and style run; requests go to the serving origin only
PAGE_CSP = (
    f"default-src 'none'; script-src {_sha256(PAGE_SCRIPT)}; style-src {_sha256(PAGE_STYLE)}; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
