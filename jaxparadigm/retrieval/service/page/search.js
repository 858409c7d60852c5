"use strict";
const form = document.getElementById("search-form");
const box = document.getElementById("q");
const kSelect = document.getElementById("k");
const modeSelect = document.getElementById("mode");
const statusLine = document.getElementById("status");
const list = document.getElementById("results");

function say(text, kind) {
  statusLine.textContent = text;
  statusLine.className = kind || "";
}

// The server's offsets (excerpt.start, marks) count code points, as every offset of the API
// (Python string indices); a JavaScript string counts UTF-16 units. So the excerpt is cut as the
// array of its code points (Array.from), never with String.slice: an emoji (two units) before a
// query word would shift every mark after it and could split a surrogate pair.
function appendMarked(parent, text, marks, offset) {
  const chars = Array.from(text);
  const piece = (a, b) => chars.slice(a, b).join("");
  let at = 0;
  for (const [s, e] of marks) {
    const a = s - offset, b = e - offset;
    if (a < at || b > chars.length) continue;
    parent.append(piece(at, a));
    const mark = document.createElement("mark");
    mark.textContent = piece(a, b);
    parent.append(mark);
    at = b;
  }
  parent.append(piece(at, chars.length));
}

// Bidi formatting characters (U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069) in a file
// name are shown as \uXXXX, and the name sits in a <bdi> (isolated): a name cannot fake its own
// extension (U+202E reverses what follows it) nor reorder the offsets and score after it.
const BIDI_CONTROLS = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

function fileName(source) {
  const name = document.createElement("bdi");
  name.className = "source";
  name.textContent = source.replace(
    BIDI_CONTROLS, (c) => "\\u" + c.charCodeAt(0).toString(16).padStart(4, "0"));
  return name;
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
    if (p) {
      meta.append(fileName(p.source), " [" + p.start + ":" + p.end + "]");
    } else {
      meta.textContent = "row " + row;
    }
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
  say(items.length + " result(s) for \u201c" + query + "\u201d, best first.");
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
  say("Searching\u2026");
  let response, answer;
  try {
    response = await fetch("/search", {
      method: "POST",
      headers: {"Content-Type": "application/json"},
      body: JSON.stringify(
        {query: query, k: Number(kSelect.value), mode: modeSelect.value, excerpts: true}),
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
