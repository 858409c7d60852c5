"""The part of a passage worth showing for a query: its best sentence, query words marked (C1.1).

A passage (about 1,000 characters at the default window) is cut into segments: sentences (a
``.``, ``!`` or ``?`` followed by whitespace ends one), lines that start a list item or a code
line, and paragraphs (a blank line; a line ends with LF, CRLF or a lone CR, so a file gives the
same segments whatever its line ends). Each segment is scored by the *distinct* query words it
holds, a word being a ``\\w+`` run compared case-insensitively (``str.casefold``) with the query's
content words: its words minus :data:`FILLER_WORDS` (function words such as "the", "without",
"about"; all of its words when every one is a function word), so a function word is neither
scored nor marked while the query holds a content word; between segments holding as many, the
corpus's inverse document frequencies decide when ``idf`` is given (the index's BM25 ``idf``,
:mod:`~jaxparadigm.retrieval.sparse.bm25`; a word it lacks weighs its largest value, a negative
one 0)::

    best = argmax_segment ( |W(query) & W(segment)|, sum over those words of idf(w) )
           (compared in that order; ties: the earlier segment)

so of two sentences holding one query word each, the one holding "password" beats the one holding
"reset" when "password" is rarer in the corpus. A segment longer than ``max_chars`` is cut to a
window of at most ``max_chars`` characters that starts a quarter of ``max_chars`` before its
heaviest query word (the first of equal weight; at a word boundary). Measured by
benchmarks/relevance_bench.py (RESULTS.md, "Passages that know where they are") on the answering
hits in the default top 3: 38 of 62 excerpts hold the evidence this way, 35 by the count alone, 37
by the idf sum alone (which loses one on the release notes, so the count comes first). With no query
word in the passage the excerpt is its first segment (cut the same way, from its start). Offsets are
the passage's own characters: ``excerpt.text == passage[excerpt.start:excerpt.end]`` and every mark
``(s, e)`` is a query word at ``passage[s:e]``, so a caller adds ``passage.start`` for file offsets.

Why word overlap and not the encoder's cosine per sentence: it needs no second encoder call per
hit and the marks it shows are what it scored; benchmarks/relevance_bench.py measures how often
the chosen excerpt holds the answer (RESULTS.md, "Relevance on real documents").
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import NamedTuple

from jaxparadigm.common.quoting import quote
from jaxparadigm.errors import require_int
from jaxparadigm.retrieval.sparse.keyword import STOPWORDS

__all__ = ["Excerpt", "FILLER_WORDS", "query_words", "segments", "best_excerpt", "mark_text"]

_WORD = re.compile(r"\w+")
# a line end: LF, CRLF or a lone CR
_EOL = r"(?:\r\n?|\n)"
# a segment ends after . ! ? + whitespace, at a blank line, or before a line starting a list item
_BREAK = re.compile(rf"(?<=[.!?])\s+|{_EOL}[ \t]*{_EOL}\s*|{_EOL}(?=[ \t]*(?:[-*+#>]|\d+[.)])\s)")

#: English function words an excerpt neither scores nor marks while the query holds another word:
#: :data:`~jaxparadigm.retrieval.sparse.keyword.STOPWORDS` and the prepositions, conjunctions,
#: pronouns and auxiliaries it leaves out ("without", "about", "has", ...). Particles and
#: quantifiers ("out" in "find out", "only", "each") and negations ("yes or no") carry meaning in
#: a question and stay content words.
FILLER_WORDS = STOPWORDS | frozenset(
    "about above after again against also am because been before being below between both but "
    "could did during either else even ever had has have having he her here hers him his however "
    "just may me might must once our she so such than then there these they those though through "
    "too under unless until upon us very via was we were whether while who whom whose will within "
    "without would yet".split()
)


class Excerpt(NamedTuple):
    """``text == passage[start:end]``; ``marks``: each query word's ``(start, end)`` in it."""

    start: int
    end: int
    text: str
    marks: tuple[tuple[int, int], ...]


def query_words(query: str) -> frozenset[str]:
    """The casefolded ``\\w+`` words of ``query`` minus :data:`FILLER_WORDS` (all of them if none
    is left)."""
    if not isinstance(query, str):
        raise TypeError(f"query: got {type(query).__name__} {quote(query)}, expected str")
    words = frozenset(w.casefold() for w in _WORD.findall(query))
    kept = frozenset(w for w in words if w not in FILLER_WORDS)
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
    ``max_chars // 4`` before it at the start of the word it falls in, or after that word when the
    word is too long to show with the anchor (a base64 run, a URL); trailing whitespace
    dropped."""
    if end - start > max_chars:
        lo = max(start, min(anchor[0] - max_chars // 4, end - max_chars))
        back = lo
        while back > start and _is_word(text[back - 1]) and _is_word(text[back]):
            back -= 1  # back to the start of the word it fell in
        if anchor[1] <= back + max_chars:
            lo = back
        else:  # that word is too long to show with the anchor: start after it
            while lo < anchor[0] and _is_word(text[lo]):
                lo += 1
            while lo < anchor[0] and text[lo].isspace():
                lo += 1
        hi = min(end, lo + max_chars)
        if hi < end and _is_word(text[hi - 1]) and _is_word(text[hi]):
            space = text.rfind(" ", anchor[1], hi)  # end at a space, keeping the anchor word
            hi = space if space > lo else hi
        start, end = lo, hi
    return start, start + len(text[start:end].rstrip())


def _weights(words: frozenset[str], idf: Mapping[str, float] | None) -> dict[str, float]:
    """Each query word's weight: its ``idf`` (the largest one when it has none), or 1."""
    if idf is None:
        return dict.fromkeys(words, 1.0)
    if not isinstance(idf, Mapping):
        raise TypeError(f"idf: got {type(idf).__name__}, expected a mapping of word -> weight")
    rarest = max(idf.values(), default=1.0)
    return {w: max(float(idf.get(w, rarest)), 0.0) for w in words}


def best_excerpt(
    passage: str, query: str, max_chars: int = 240, idf: Mapping[str, float] | None = None
) -> Excerpt:
    """The best-matching segment of ``passage`` for ``query``, at most ``max_chars`` characters,
    with the query words marked (module docstring); ``idf``: the corpus's word weights, which
    break ties between segments holding as many query words (``None``: the earlier segment). A
    blank passage gives an empty excerpt."""
    if not isinstance(passage, str):
        raise TypeError(f"passage: got {type(passage).__name__}, expected str")
    weight = _weights(query_words(query), idf)
    max_chars = require_int("max_chars", max_chars, 1)
    hits = [m.span() for m in _WORD.finditer(passage) if m.group().casefold() in weight]
    best: tuple[int, int] | None = None
    best_score = (0, 0.0)
    spans = segments(passage)
    if not spans:
        return Excerpt(0, 0, "", ())
    for s, e in spans:
        found = {passage[a:b].casefold() for a, b in hits if s <= a and b <= e}
        score = (len(found), sum(weight[w] for w in found))
        if found and (best is None or score > best_score):
            best, best_score = (s, e), score
    if best is None:
        s, e = spans[0]
        anchor = (s, s)
    else:
        s, e = best
        inside = [(a, b) for a, b in hits if s <= a and b <= e]
        anchor = max(inside, key=lambda h: (weight[passage[h[0] : h[1]].casefold()], -h[0]))
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
