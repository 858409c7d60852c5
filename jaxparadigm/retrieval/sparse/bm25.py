"""Okapi BM25 keyword scores over passages, the formula of rank_bm25's ``BM25Okapi`` (C1.1).

For a corpus of ``N`` passages with mean length ``avgdl`` (in words), a passage ``d`` of ``|d|``
words and a query of words ``q_1 .. q_m`` (a word repeated in the query counts each time):

    score(d, q) = sum_i idf(q_i) * f(q_i, d) * (k1 + 1) / (f(q_i, d) + k1 * L(d))
    L(d)        = 1 - b + b * |d| / avgdl
    idf(t)      = ln((N - n(t) + 0.5) / (n(t) + 0.5))        (Robertson / Sparck Jones)

with ``f(t, d)`` the count of ``t`` in ``d`` and ``n(t)`` the number of passages holding ``t``.
A word in more than half the passages has a negative idf; as in rank_bm25 it is replaced by
``epsilon * mean(idf)`` (mean over the corpus vocabulary). Defaults ``k1 = 1.5``, ``b = 0.75``,
``epsilon = 0.25`` (rank_bm25's). Words are the lower-cased ``\\w+`` runs of the text minus
:data:`~jaxparadigm.retrieval.sparse.keyword.STOPWORDS` (the token-overlap ranker's words); a word not in
the corpus adds nothing. Pure: :func:`bm25_index` builds the statistics once, :func:`bm25_scores`
scores one query against all passages.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from jaxparadigm.common.numbers import check_float
from jaxparadigm.errors import require_int
from jaxparadigm.retrieval.sparse.keyword import STOPWORDS

__all__ = ["BM25Index", "bm25_words", "bm25_index", "bm25_scores", "bm25_top"]

_WORD = re.compile(r"\w+")


class BM25Index(NamedTuple):
    """Corpus statistics: per word the passages holding it and its counts there, the idf, the
    passage lengths and the parameters (C1.1)."""

    postings: dict[str, tuple[np.ndarray, np.ndarray]]  # word -> (passage ids, counts)
    idf: dict[str, float]
    lengths: np.ndarray  # float64 [N]: words per passage
    avgdl: float
    k1: float
    b: float


def bm25_words(text: str) -> list[str]:
    """The words BM25 counts: lower-cased ``\\w+`` runs of ``text`` minus stopwords, in order."""
    if not isinstance(text, str):
        raise TypeError(f"text: got {type(text).__name__} {text!r}, expected str")
    return [w for w in _WORD.findall(text.lower()) if w not in STOPWORDS]


def bm25_index(
    passages: Sequence[str], *, k1: float = 1.5, b: float = 0.75, epsilon: float = 0.25
) -> BM25Index:
    """The BM25 statistics of ``passages`` (module docstring); at least one passage."""
    if isinstance(passages, str) or not isinstance(passages, Sequence):
        raise TypeError(f"passages: got {type(passages).__name__}, expected a list of str")
    if len(passages) == 0:
        raise ValueError("passages: got an empty list, expected at least one passage")
    k1 = check_float("k1", k1, 0.0, error=ValueError)
    b = check_float("b", b, 0.0, 1.0, error=ValueError)
    epsilon = check_float("epsilon", epsilon, 0.0, error=ValueError)
    ids: dict[str, list[int]] = {}
    counts: dict[str, list[int]] = {}
    lengths = np.zeros(len(passages), np.float64)
    for i, text in enumerate(passages):
        if not isinstance(text, str):
            raise TypeError(f"passages[{i}]: got {type(text).__name__}, expected str")
        words = Counter(bm25_words(text))
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
    return BM25Index(postings, idf, lengths, avgdl, k1, b)


def bm25_scores(index: BM25Index, query: str) -> np.ndarray:
    """float64 ``[N]``: ``score(d, query)`` for every passage ``d`` of ``index`` (all zeros when no
    query word is in the corpus)."""
    scores = np.zeros(index.lengths.shape[0], np.float64)
    # a passage of no words keeps length 0; avgdl 0 means every passage is empty: no word matches
    norm = index.k1 * (1 - index.b + index.b * index.lengths / (index.avgdl or 1.0))
    for w in bm25_words(query):
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
