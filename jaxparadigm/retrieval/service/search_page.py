"""The search page ``jaxparadigm serve`` answers at ``GET /``: one self-contained HTML document (C5.2).

No external script, font, stylesheet or image: the page is :data:`SEARCH_PAGE` alone and works
offline. It is served with :data:`PAGE_CSP`, a Content-Security-Policy that lets the browser run
only this page's own script and style (by their SHA-256) and connect only to the server that sent
it, so the page cannot make a request that leaves it.

What it does: the search box has the keyboard focus on load (``/`` brings it back from anywhere);
Enter posts ``{"query": ..., "k": ..., "excerpts": true}`` to ``/search`` (the JSON API, the same
hits as any other client) and lists the hits in rank order. Each result is an ``<li class="hit"
data-row="ROW" tabindex="0">`` showing the file, the passage's character offsets in it
``[start:end]``, the score (cosine, 4 decimals) and the excerpt the server chose with
:func:`~jaxparadigm.retrieval.ranking.excerpt.best_excerpt` -- the passage's segment holding the most
distinct query words -- with those words in ``<mark>`` (the server's marks, so the page shows what
was scored; no second matcher in JavaScript). A service without passages (over a
:class:`~jaxparadigm.retrieval.index.memory_index.SemanticIndex`) shows each hit's row and score. An
empty query is answered on the page ("Type a
question first ...") without a request; a refused request shows the server's ``error`` message and
status; an unreachable server says so. Text is inserted with ``textContent`` only (never parsed as
HTML), so a passage cannot inject markup.
"""

from __future__ import annotations

import base64
import hashlib

__all__ = ["PAGE_CSP", "PAGE_SCRIPT", "PAGE_STYLE", "SEARCH_PAGE"]

#: the page's stylesheet (inline; its SHA-256 is in :data:`PAGE_CSP`)
PAGE_STYLE = """
body { font: 16px/1.5 system-ui, sans-serif; margin: 0; color: #1d2330; background: #f7f8fa; }
main { max-width: 52rem; margin: 0 auto; padding: 1.5rem 1rem 3rem; }
h1 { font-size: 1.4rem; margin: 0 0 1rem; }
form { display: flex; gap: .5rem; flex-wrap: wrap; align-items: center; }
#q { flex: 1 1 24rem; font: inherit; padding: .5rem .7rem; border: 2px solid #8a94a6;
     border-radius: 6px; }
#q:focus, select:focus, button:focus, .hit:focus { outline: 3px solid #2f6fde; outline-offset: 1px; }
select, button { font: inherit; padding: .45rem .6rem; border-radius: 6px; }
#status { min-height: 1.5rem; color: #4a5366; }
#status.error { color: #a3201c; font-weight: 600; }
ol { padding-left: 1.6rem; }
.hit { background: #fff; border: 1px solid #d9dde5; border-radius: 8px; padding: .6rem .8rem;
       margin: 0 0 .7rem; }
.meta { font-family: ui-monospace, monospace; font-size: .85rem; color: #4a5366;
        overflow-wrap: anywhere; }
.score { float: right; margin-left: 1rem; }
.excerpt { margin: .35rem 0 0; white-space: pre-wrap; }
mark { background: #ffe16b; padding: 0 .1em; border-radius: 2px; }
.hint { font-size: .85rem; color: #6a7385; }
"""

#: the page's script (inline; its SHA-256 is in :data:`PAGE_CSP`)
PAGE_SCRIPT = """
"use strict";
const form = document.getElementById("search-form");
const box = document.getElementById("q");
const kSelect = document.getElementById("k");
const statusLine = document.getElementById("status");
const list = document.getElementById("results");

function say(text, kind) {
  statusLine.textContent = text;
  statusLine.className = kind || "";
}

function appendMarked(parent, text, marks, offset) {
  let at = 0;
  for (const [s, e] of marks) {
    const a = s - offset, b = e - offset;
    if (a < at || b > text.length) continue;
    parent.append(text.slice(at, a));
    const mark = document.createElement("mark");
    mark.textContent = text.slice(a, b);
    parent.append(mark);
    at = b;
  }
  parent.append(text.slice(at));
}

function show(query, answer) {
  const passages = answer.passages || [];
  const items = answer.hits.map(([row, score], i) => {
    const item = document.createElement("li");
    item.className = "hit";
    item.dataset.row = String(row);
    item.tabIndex = 0;
    const meta = document.createElement("div");
    meta.className = "meta";
    const p = passages[i];
    meta.textContent = p ? p.source + " [" + p.start + ":" + p.end + "]" : "row " + row;
    const shown = document.createElement("span");
    shown.className = "score";
    shown.textContent = "score " + score.toFixed(4);
    meta.append(shown);
    item.append(meta);
    if (p && p.excerpt) {
      const excerpt = document.createElement("p");
      excerpt.className = "excerpt";
      appendMarked(excerpt, p.excerpt.text, p.excerpt.marks, p.excerpt.start);
      item.append(excerpt);
    }
    return item;
  });
  list.replaceChildren(...items);
  say(items.length + " result(s) for \\u201c" + query + "\\u201d, best first.");
}

async function search(event) {
  event.preventDefault();
  const query = box.value;
  if (!query.trim()) {
    list.replaceChildren();
    say("Type a question first: the query is empty.", "error");
    box.focus();
    return;
  }
  say("Searching\\u2026");
  let response, answer;
  try {
    response = await fetch("/search", {
      method: "POST",
      headers: {"Content-Type": "application/json"},
      body: JSON.stringify({query: query, k: Number(kSelect.value), excerpts: true}),
    });
    answer = await response.json();
  } catch (err) {
    list.replaceChildren();
    say("The server did not answer (" + err.message + "). Is jaxparadigm serve still running?",
        "error");
    return;
  }
  if (!response.ok) {
    list.replaceChildren();
    say("The server refused the search (HTTP " + response.status + "): " + answer.error, "error");
    return;
  }
  show(query, answer);
}

form.addEventListener("submit", search);
document.addEventListener("keydown", (event) => {
  if (event.key === "/" && document.activeElement !== box) {
    event.preventDefault();
    box.focus();
    box.select();
  }
});
box.focus();
"""

#: the whole page ``GET /`` answers (HTML; no outside resource)
SEARCH_PAGE = f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>jaxparadigm search</title>
<style>{PAGE_STYLE}</style>
</head>
<body>
<main>
<h1>Search the index</h1>
<form id="search-form" role="search">
  <label for="q" class="hint">Question</label>
  <input id="q" name="q" type="search" autofocus autocomplete="off"
         placeholder="Ask a question and press Enter">
  <label for="k" class="hint">results</label>
  <select id="k"><option>5</option><option selected>10</option><option>20</option></select>
  <button type="submit">Search</button>
</form>
<p class="hint">Enter searches; Tab walks the results; / returns to the box.</p>
<p id="status" role="status" aria-live="polite"></p>
<ol id="results"></ol>
</main>
<script>{PAGE_SCRIPT}</script>
</body>
</html>
"""


def _sha256(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


#: only this page's script and style run; requests go to the serving origin only
PAGE_CSP = (
    f"default-src 'none'; script-src {_sha256(PAGE_SCRIPT)}; style-src {_sha256(PAGE_STYLE)}; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
