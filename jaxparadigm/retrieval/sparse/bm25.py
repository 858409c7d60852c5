"""Okapi BM25 keyword scores over passages, the formula of rank_bm25's ``BM25Okapi`` (C1.1).

For a corpus of ``N`` passages with mean length ``avgdl`` (in words), a passage ``d`` of ``|d|``
words and a query of words ``q_1 .. q_m`` (a word repeated in the query counts each time)::

    score(d, q) = sum_i idf(q_i) * f(q_i, d) * (k1 + 1) / (f(q_i, d) + k1 * L(d))
    L(d)        = 1 - b + b * |d| / avgdl
    idf(t)      = ln((N - n(t) + 0.5) / (n(t) + 0.5))        (Robertson / Sparck Jones)

with ``f(t, d)`` the count of ``t`` in ``d`` and ``n(t)`` the number of passages holding ``t``.
A word in more than half the passages has a negative idf; as in rank_bm25 it is replaced by
``epsilon * mean(idf)`` (mean over the corpus vocabulary). Defaults ``k1 = 1.5``, ``b = 0.75``,
``epsilon = 0.25`` (rank_bm25's). A word not in the corpus adds nothing. Pure: :func:`bm25_index`
builds the statistics once, :func:`bm25_scores` scores one query against all passages.

**Words** (:func:`bm25_words`, the same for passages and queries). The text is read as runs
``\\w+(\\.\\w+)*`` -- a word or a dotted name -- and each run gives, lower-cased and in order::

    the run whole                       os.path.join, 2.27.0, snake_case, clirunner
    for a dotted run, each part whole   os, path, join
    the parts of each word              snake_case -> snake, case; CliRunner -> cli, runner;
                                        HTTPServer -> http, server; getURL2 -> get, url2

a word's parts being its pieces between underscores, each cut where a lower-case letter meets an
upper-case one and before the last capital of a run of capitals followed by a lower-case letter
(digits stay with their letters; ``__init__`` -> init); a word that is its own one part gives
nothing more. Identifiers are thus matched whole and by their words: a query's "snake case" meets
``snake_case``, its ``CliRunner`` meets "runner". Words in
:data:`~jaxparadigm.retrieval.sparse.keyword.STOPWORDS` (the token-overlap ranker's) are dropped.
``identifiers=False`` keeps only the lower-cased ``\\w+`` runs (measured against the split in
benchmarks/RESULTS.md, "Passages that know where they are": level on every kind's top 3 and top
10, MRR 0.624 -> 0.629 over 70 questions, so the split is the default).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from jaxparadigm.common.numbers import check_float
from jaxparadigm.common.quoting import quote
from jaxparadigm.errors import require_int
from jaxparadigm.retrieval.sparse.keyword import STOPWORDS

__all__ = ["BM25Index", "bm25_words", "identifier_parts", "bm25_index", "bm25_scores", "bm25_top"]

_WORD = re.compile(r"\w+")
_RUN = re.compile(r"\w+(?:\.\w+)*")  # a word, or a dotted name: os.path.join, 2.27.0


class BM25Index(NamedTuple):
    """Corpus statistics: per word the passages holding it and its counts there, the idf, the
    passage lengths and the parameters (C1.1)."""

    postings: dict[str, tuple[np.ndarray, np.ndarray]]  # word -> (passage ids, counts)
    idf: dict[str, float]
    lengths: np.ndarray  # float64 [N]: words per passage
    avgdl: float
    k1: float
    b: float
    identifiers: bool = True  # how passages and queries are cut into words (bm25_words)


def _cut_case(piece: str) -> list[str]:
    """``piece`` cut where a lower-case letter meets an upper-case one (``getURL`` -> get, URL)
    and before the last capital of a run followed by a lower-case letter (``HTTPServer``)."""
    cuts = [0]
    for i in range(1, len(piece)):
        a, c = piece[i - 1], piece[i]
        after = piece[i + 1] if i + 1 < len(piece) else ""
        if c.isupper() and (a.islower() or (a.isupper() and after.islower())):
            cuts.append(i)
    cuts.append(len(piece))
    return [piece[x:y] for x, y in zip(cuts, cuts[1:], strict=False)]


def identifier_parts(word: str) -> list[str]:
    """The words of an identifier, case kept: its pieces between underscores, each cut at case
    changes (module docstring); ``[word]`` itself when it has one part."""
    if not isinstance(word, str):
        raise TypeError(f"word: got {type(word).__name__} {word!r}, expected str")
    return [part for piece in word.split("_") if piece for part in _cut_case(piece)]


def bm25_words(text: str, identifiers: bool = True) -> list[str]:
    """The words BM25 counts in ``text``, in order (module docstring): each run whole, its dotted
    parts and its identifiers' parts, lower-cased, minus stopwords; ``identifiers=False``: the
    lower-cased ``\\w+`` runs only."""
    if not isinstance(text, str):
        raise TypeError(f"text: got {type(text).__name__} {text!r}, expected str")
    if not identifiers:
        return [w for w in _WORD.findall(text.lower()) if w not in STOPWORDS]
    out: list[str] = []
    for run in _RUN.findall(text):
        dotted = run.split(".")
        if len(dotted) > 1:
            out.append(run)
        for word in dotted:
            out.append(word)
            parts = identifier_parts(word)
            if parts != [word]:
                out += parts
    return [w for w in (x.lower() for x in out) if w not in STOPWORDS]


def bm25_index(
    passages: Sequence[str],
    *,
    k1: float = 1.5,
    b: float = 0.75,
    epsilon: float = 0.25,
    identifiers: bool = True,
) -> BM25Index:
    """The BM25 statistics of ``passages`` (module docstring); at least one passage.
    ``identifiers``: how :func:`bm25_words` cuts passages (and later the queries) into words."""
    if isinstance(passages, str) or not isinstance(passages, Sequence):
        raise TypeError(f"passages: got {type(passages).__name__}, expected a list of str")
    if len(passages) == 0:
        raise ValueError("passages: got an empty list, expected at least one passage")
    k1 = check_float("k1", k1, 0.0, error=ValueError)
    b = check_float("b", b, 0.0, 1.0, error=ValueError)
    epsilon = check_float("epsilon", epsilon, 0.0, error=ValueError)
    if not isinstance(identifiers, bool):
        raise TypeError(f"identifiers: got {quote(identifiers)}, expected True or False")
    ids: dict[str, list[int]] = {}
    counts: dict[str, list[int]] = {}
    lengths = np.zeros(len(passages), np.float64)
    for i, text in enumerate(passages):
        if not isinstance(text, str):
            raise TypeError(f"passages[{i}]: got {type(text).__name__}, expected str")
        words = Counter(bm25_words(text, identifiers))
        lengths[i] = sum(words.values())
        for w, c in words.items():
            ids.setdefault(w, []).append(i)
            counts.setdefault(w, []).append(c)
    n = len(passages)
    idf = {w: math.log(n - len(p) + 0.5) - math.log(len(p) + 0.5) for w, p in ids.items()}
    floor = epsilon * (sum(idf.values()) / len(idf)) if idf else 0.0
    idf = {w: (v if v >= 0 else floor) for w, v in idf.items()}
    postings = {w: (np.asarray(ids[w]), np.asarray(counts[w], np.float64)) for w in ids}
    avgdl = float(lengths.mean())
    return BM25Index(postings, idf, lengths, avgdl, k1, b, identifiers)


def bm25_scores(index: BM25Index, query: str) -> np.ndarray:
    """float64 ``[N]``: ``score(d, query)`` for every passage ``d`` of ``index`` (all zeros when no
    query word is in the corpus)."""
    scores = np.zeros(index.lengths.shape[0], np.float64)
    # a passage of no words keeps length 0; avgdl 0 means every passage is empty: no word matches
    norm = index.k1 * (1 - index.b + index.b * index.lengths / (index.avgdl or 1.0))
    for w in bm25_words(query, index.identifiers):
        if w not in index.postings:
            continue
        rows, f = index.postings[w]
        scores[rows] += index.idf[w] * f * (index.k1 + 1) / (f + norm[rows])
    return scores


def bm25_top(index: BM25Index, query: str, k: int) -> list[int]:
    """The ``k`` best passage ids for ``query`` by :func:`bm25_scores`, best first; ties keep
    passage order; passages scoring 0 (no query word) are left out, so possibly fewer than k."""
    k = require_int("k", k, 1)
    scores = bm25_scores(index, query)
    order = np.argsort(-scores, kind="stable")[:k]
    return [int(i) for i in order if scores[i] != 0.0]
