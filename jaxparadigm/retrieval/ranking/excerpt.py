"""The part of a passage worth showing for a query: its best sentence, query words marked (C1.1).

A passage (about 1,000 characters at the default window) is cut into segments: sentences (a
``.``, ``!`` or ``?`` followed by whitespace ends one), lines that start a list item or a code
line, and paragraphs (a blank line). Each segment is scored by the number of *distinct* query
words it holds, a word being a ``\\w+`` run compared case-insensitively (``str.casefold``) with the
query's words minus :data:`~jaxparadigm.retrieval.sparse.keyword.STOPWORDS` (all of its words when every
one is a stopword):

    best = argmax_segment |W(query) & W(segment)|      (ties: the earlier segment)

A segment longer than ``max_chars`` is cut to a window of at most ``max_chars`` characters that
starts a quarter of ``max_chars`` before its first query word (at a word boundary). With no query
word in the passage the excerpt is its first segment (cut the same way, from its start). Offsets are
the passage's own characters: ``excerpt.text == passage[excerpt.start:excerpt.end]`` and every mark
``(s, e)`` is a query word at ``passage[s:e]``, so a caller adds ``passage.start`` for file offsets.

Why word overlap and not the encoder's cosine per sentence: it needs no second encoder call per
hit and the marks it shows are what it scored; benchmarks/relevance_bench.py measures how often
the chosen excerpt holds the answer (RESULTS.md, "Relevance on real documents").
"""

from __future__ import annotations

import re
from typing import NamedTuple

from jaxparadigm.errors import require_int
from jaxparadigm.retrieval.sparse.keyword import STOPWORDS

__all__ = ["Excerpt", "query_words", "segments", "best_excerpt", "mark_text"]

_WORD = re.compile(r"\w+")
# a segment ends after . ! ? + whitespace, at a blank line, or before a line starting a list item
_BREAK = re.compile(r"(?<=[.!?])\s+|\n[ \t]*\n\s*|\n(?=[ \t]*(?:[-*+#>]|\d+[.)])\s)")


class Excerpt(NamedTuple):
    """``text == passage[start:end]``; ``marks``: each query word's ``(start, end)`` in it."""

    start: int
    end: int
    text: str
    marks: tuple[tuple[int, int], ...]


def query_words(query: str) -> frozenset[str]:
    """The casefolded ``\\w+`` words of ``query`` minus stopwords (all of them if none is left)."""
    if not isinstance(query, str):
        raise TypeError(f"query: got {type(query).__name__} {query!r}, expected str")
    words = frozenset(w.casefold() for w in _WORD.findall(query))
    kept = frozenset(w for w in words if w not in STOPWORDS)
    return kept or words


def segments(text: str) -> list[tuple[int, int]]:
    """The segments of ``text`` (module docstring): non-blank ``[start, end)`` spans between
    breaks, whitespace trimmed, in order."""
    spans, at = [], 0
    for m in [*_BREAK.finditer(text), None]:
        stop = len(text) if m is None else m.start()
        piece = text[at:stop]
        lead = len(piece) - len(piece.lstrip())
        trail = len(piece.rstrip())
        if trail > lead:
            spans.append((at + lead, at + trail))
        if m is not None:
            at = m.end()
    return spans


def _is_word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def _cut(
    text: str, start: int, end: int, anchor: tuple[int, int], max_chars: int
) -> tuple[int, int]:
    """At most ``max_chars`` of ``[start, end)`` holding the word ``anchor``, beginning about
    ``max_chars // 4`` before it, never inside a word; trailing whitespace dropped."""
    if end - start > max_chars:
        lo = max(start, min(anchor[0] - max_chars // 4, end - max_chars))
        while lo > start and _is_word(text[lo - 1]) and _is_word(text[lo]):
            lo -= 1  # back to the start of the word it fell in
        hi = min(end, lo + max_chars)
        if hi < end and _is_word(text[hi - 1]) and _is_word(text[hi]):
            space = text.rfind(" ", anchor[1], hi)  # end at a space, keeping the anchor word
            hi = space if space > lo else hi
        start, end = lo, hi
    return start, start + len(text[start:end].rstrip())


def best_excerpt(passage: str, query: str, max_chars: int = 240) -> Excerpt:
    """The best-matching segment of ``passage`` for ``query``, at most ``max_chars`` characters,
    with the query words marked (module docstring). A blank passage gives an empty excerpt."""
    if not isinstance(passage, str):
        raise TypeError(f"passage: got {type(passage).__name__}, expected str")
    words = query_words(query)
    max_chars = require_int("max_chars", max_chars, 1)
    hits = [m.span() for m in _WORD.finditer(passage) if m.group().casefold() in words]
    best: tuple[int, int] | None = None
    best_n = 0
    spans = segments(passage)
    if not spans:
        return Excerpt(0, 0, "", ())
    for s, e in spans:
        found = {passage[a:b].casefold() for a, b in hits if s <= a and b <= e}
        if len(found) > best_n:
            best, best_n = (s, e), len(found)
    if best is None:
        s, e = spans[0]
        anchor = (s, s)
    else:
        s, e = best
        anchor = next((a, b) for a, b in hits if s <= a and b <= e)
    lo, hi = _cut(passage, s, e, anchor, max_chars)
    marks = tuple((a, b) for a, b in hits if lo <= a and b <= hi)
    return Excerpt(lo, hi, passage[lo:hi], marks)


def mark_text(
    text: str,
    marks: tuple[tuple[int, int], ...] | list,
    offset: int = 0,
    open_mark: str = "**",
    close_mark: str = "**",
) -> str:
    """``text`` with every mark ``(s, e)`` (offsets of the passage; ``offset`` = where ``text``
    starts in it, e.g. ``excerpt.start``) wrapped in ``open_mark`` / ``close_mark``."""
    out, at = [], 0
    for s, e in sorted(marks):
        s, e = s - offset, e - offset
        if not (at <= s < e <= len(text)):
            raise ValueError(
                f"marks: got ({s + offset}, {e + offset}), expected non-overlapping spans inside "
                f"[{offset}, {offset + len(text)})"
            )
        out += [text[at:s], open_mark, text[s:e], close_mark]
        at = e
    out.append(text[at:])
    return "".join(out)
