"""Keyword retrieval baselines: the seed's substring matcher and a token-overlap ranker (C1.1).

The seed's matcher is ``[doc for doc in docs if query.lower() in doc.lower()]``: a document matches
only when the *whole query* occurs in it verbatim, so a paraphrase almost never matches. The
token-overlap variant is the usual first repair: score a document by the fraction of distinct query
words (lower-cased ``\\w+`` runs, a few English stopwords removed) that occur in it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from jaxparadigm.errors import require_int

__all__ = ["keyword_search", "word_set", "STOPWORDS"]

STOPWORDS = frozenset(
    "a an and are as at be by can do does for from how i if in into is it its my of on or "
    "should that the this to what when where which why with you your".split()
)

_WORD = re.compile(r"\w+")


def word_set(text: str) -> frozenset[str]:
    """Distinct lower-cased ``\\w+`` words of ``text`` minus :data:`STOPWORDS` (C1.1)."""
    return frozenset(w for w in _WORD.findall(text.lower()) if w not in STOPWORDS)


def _check(query: str, docs: Sequence[str], top_k: int) -> None:
    if not isinstance(query, str):
        raise TypeError(f"query: got {type(query).__name__} {query!r}, expected str")
    if isinstance(docs, str) or not isinstance(docs, Sequence):
        raise TypeError(f"docs: got {type(docs).__name__}, expected a list of str")
    for i, d in enumerate(docs):
        if not isinstance(d, str):
            raise TypeError(f"docs[{i}]: got {type(d).__name__}, expected str")
    top_k = require_int("top_k", top_k, 1)


def keyword_search(
    query: str, docs: Sequence[str], top_k: int = 5, mode: str = "substring"
) -> list[tuple[int, float]]:
    """Rank ``docs`` for ``query`` by keywords; returns ``[(doc_index, score)]``, best first (C1.1).

    ``mode="substring"`` is the seed's matcher: score 1.0 when ``query.lower() in doc.lower()``,
    matches in document order, non-matches omitted. ``mode="token_overlap"`` scores
    ``|W(q) & W(d)| / |W(q)|`` with ``W`` = :func:`word_set`, omits zero scores, and breaks ties by
    document order. At most ``top_k`` results; possibly none.
    """
    _check(query, docs, top_k)
    if mode == "substring":
        q = query.lower()
        return [(i, 1.0) for i, d in enumerate(docs) if q in d.lower()][:top_k]
    if mode == "token_overlap":
        words = word_set(query)
        if not words:
            return []
        scored = [(i, len(words & word_set(d)) / len(words)) for i, d in enumerate(docs)]
        scored = [(i, s) for i, s in scored if s > 0]
        scored.sort(key=lambda pair: -pair[1])  # stable: ties keep document order
        return scored[:top_k]
    raise ValueError(f"mode: got {mode!r}, expected 'substring' or 'token_overlap'")
