"""Search an index by default: hybrid ranking, each hit's cosine and best excerpt, serve's JSON (C1.1).

:func:`search_with_excerpts` is what ``jaxparadigm search --index`` runs (and what a search page
can call): for one query it returns :class:`ScoredHit` s, best first, in one of two modes:

    mode "hybrid" (default)   score = RRF(row) = 1/(60 + dense rank) + 1/(60 + BM25 rank)
                              (:func:`~jaxparadigm.retrieval.ranking.hybrid_search.hybrid_search`; a
                              missing rank adds 0), so 2/61 ~= 0.0328 at most
    mode "dense"              score = cos(query, passage)   (the index's exact top-k)

and in both modes ``cosine = q . x_row`` (unit vectors: the cosine), so the dense similarity is
always there. The defaults are those benchmarks/relevance_bench.py measured best on installed
third-party text (RESULTS.md, "Relevance on real documents" and "Passages that know where they
are"): hybrid put an answering passage in the top 3 for 32 of 38 questions against 28 of 38 for
dense alone; the excerpt (:func:`~jaxparadigm.retrieval.ranking.excerpt.best_excerpt`) counts
the query's words and breaks ties by the keyword index's idf whenever there is one (hybrid mode,
or ``keyword`` given): it held the evidence 38 of 62 times against 35 by the count alone and 10
for a passage's first 160 characters.

:func:`search_response` is the JSON of ``jaxparadigm serve``'s answer, ``{"hits": [[row, score],
...], "passages": [{"source", "start", "end", "text"}, ...]}``, with what a hit adds beside it:
``"mode"``, ``"score"`` (what the score is, in words) and per passage ``"cosine"`` and
``"excerpt"`` (``{"start", "end", "text", "marks"}``, offsets into the passage's text, marks as
``[start, end]`` pairs). :func:`passage_record` is serve's record of one passage.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from jaxparadigm.errors import InputError, require_int
from jaxparadigm.retrieval.index.searcher import Hit, IndexSearcher
from jaxparadigm.retrieval.ranking.excerpt import Excerpt, best_excerpt
from jaxparadigm.retrieval.ranking.hybrid_search import hybrid_search, keyword_index
from jaxparadigm.retrieval.sparse.bm25 import BM25Index

if TYPE_CHECKING:
    from jaxparadigm.retrieval.encoder.sentence_encoder import SentenceEncoder

__all__ = [
    "MODES",
    "SCORE_MEANING",
    "ScoredHit",
    "search_with_excerpts",
    "passage_record",
    "search_response",
]

#: The search modes, the default first.
MODES = ("hybrid", "dense")
#: What a hit's ``score`` is, per mode (the text output's header and the JSON's ``"score"``).
SCORE_MEANING = {
    "hybrid": "reciprocal rank fusion of the dense and BM25 ranks, sum of 1/(60 + rank)",
    "dense": "cosine similarity of the query and passage embeddings",
}


class ScoredHit(NamedTuple):
    """One result: ``score`` (per mode, module docstring), corpus ``row``, the passage (``source``,
    ``start``, ``end``, ``text``), the query-passage ``cosine`` and the passage's best ``excerpt``."""

    score: float
    row: int
    source: str
    start: int
    end: int
    text: str
    cosine: float
    excerpt: Excerpt


def search_with_excerpts(
    searcher: IndexSearcher,
    encoder: SentenceEncoder,
    query: str,
    k: int = 10,
    *,
    mode: str = "hybrid",
    keyword: BM25Index | None = None,
    depth: int = 100,
    approx: bool = False,
    excerpt_chars: int = 240,
    nprobe: int | None = None,
) -> list[ScoredHit]:
    """The top ``k`` passages of ``searcher``'s index for ``query`` (module docstring), best first.

    ``keyword``: the index's :func:`~jaxparadigm.retrieval.ranking.hybrid_search.keyword_index` (built here
    when None in hybrid mode; pass it when searching repeatedly). ``depth``: how many of each
    ranking hybrid fuses. ``approx``: ``lax.approx_max_k`` (dense mode only). ``nprobe``: the
    dense ranking scans that many inverted lists of an IVF index (``None``: exact).
    """
    if not isinstance(query, str):
        raise TypeError(f"query: got {type(query).__name__}, expected str")
    if mode not in MODES:
        raise InputError(f"mode: got {mode!r}, expected one of {', '.join(MODES)}")
    require_int("k", k, 1)
    require_int("excerpt_chars", excerpt_chars, 1)
    if approx and mode != "dense":
        raise InputError("approx: given with mode 'hybrid', expected mode 'dense' (--dense-only)")
    hits: list[Hit]
    if mode == "dense":
        hits = searcher.search(encoder, query, k, approx=approx, nprobe=nprobe)[0]
    else:
        keyword = keyword_index(searcher) if keyword is None else keyword
        hits = hybrid_search(
            searcher, encoder, query, k, keyword=keyword, depth=depth, nprobe=nprobe
        )[0]
    idf = None if keyword is None else keyword.idf  # the corpus's idf breaks excerpt ties
    q = np.asarray(encoder.encode([query], normalize=True), np.float32).reshape(-1)
    out = []
    for h in hits:
        x = searcher.source.take(h.row, h.row + 1)[0]
        cosine = h.score if mode == "dense" else float(np.dot(x, q))
        excerpt = best_excerpt(h.text, query, excerpt_chars, idf=idf)
        out.append(ScoredHit(*h, cosine=cosine, excerpt=excerpt))
    return out


def passage_record(hit: Hit | ScoredHit) -> dict:
    """``{"source", "start", "end", "text"}``: a passage as ``serve`` answers it."""
    return {"source": hit.source, "start": hit.start, "end": hit.end, "text": hit.text}


def search_response(hits: list[ScoredHit], mode: str = "hybrid") -> dict:
    """The JSON object of ``search --json`` (module docstring): serve's ``hits`` and ``passages``,
    plus ``mode``, ``score`` and each passage's ``cosine`` and ``excerpt``."""
    if mode not in MODES:
        raise InputError(f"mode: got {mode!r}, expected one of {', '.join(MODES)}")
    passages = []
    for h in hits:
        e = h.excerpt
        excerpt = {
            "start": e.start,
            "end": e.end,
            "text": e.text,
            "marks": [list(m) for m in e.marks],
        }
        passages.append({**passage_record(h), "cosine": h.cosine, "excerpt": excerpt})
    return {
        "mode": mode,
        "score": SCORE_MEANING[mode],
        "hits": [[h.row, h.score] for h in hits],
        "passages": passages,
    }
