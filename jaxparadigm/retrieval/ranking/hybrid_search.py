"""Hybrid search of an index: BM25 and dense rankings fused by reciprocal rank fusion (C1.1).

For each query, the dense ranking is the index's top ``depth`` by cosine
(:meth:`~jaxparadigm.retrieval.index.searcher.IndexSearcher.search`), the keyword ranking the top
``depth`` by :mod:`~jaxparadigm.retrieval.sparse.bm25` over the same passages; the result is their
:func:`~jaxparadigm.retrieval.ranking.rank_fusion.reciprocal_rank_fusion` (``rrf_k = 60``), best first:

    score(row) = 1 / (60 + dense rank) + 1 / (60 + BM25 rank)      (a missing rank adds 0)

so a returned :class:`~jaxparadigm.retrieval.index.searcher.Hit`'s ``score`` is that fused score, not
a cosine. Measured by benchmarks/relevance_bench.py on three corpora of installed third-party text
(RESULTS.md, "Relevance on real documents"): 254-word-piece windows, 32/38 questions with an
answering passage in the top 3 against 28/38 for dense alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from jaxparadigm.errors import InputError, require_int
from jaxparadigm.retrieval.index.searcher import Hit, IndexSearcher
from jaxparadigm.retrieval.ranking.rank_fusion import reciprocal_rank_fusion
from jaxparadigm.retrieval.sparse.bm25 import BM25Index, bm25_index, bm25_top

if TYPE_CHECKING:
    from jaxparadigm.retrieval.encoder.sentence_encoder import SentenceEncoder

__all__ = ["keyword_index", "hybrid_search"]


def keyword_index(searcher: IndexSearcher, **bm25_params: float) -> BM25Index:
    """The :func:`~jaxparadigm.retrieval.sparse.bm25.bm25_index` of every passage of ``searcher``'s index,
    row order (reads every shard's passages once). Refused for a search split over processes
    (each holds only its own passages): search it with ``mode="dense"``."""
    if searcher.group is not None:
        raise InputError(
            f"mode: hybrid needs every passage for its BM25 ranking, but this search is split "
            f"over {searcher.group.processes} processes (each holds its own shards); expected "
            "the dense mode (search --mode dense)"
        )
    return bm25_index([searcher.passage(r).text for r in range(len(searcher))], **bm25_params)


def hybrid_search(
    searcher: IndexSearcher,
    encoder: SentenceEncoder,
    queries: str | Sequence[str],
    k: int = 10,
    *,
    keyword: BM25Index | None = None,
    depth: int = 100,
    rrf_k: int = 60,
    nprobe: int | None = None,
) -> list[list[Hit]]:
    """The top ``k`` fused hits of each query (module docstring), best first; ``keyword`` is the
    index's :func:`keyword_index` (built here when None: pass it to search repeatedly);
    ``nprobe``: the dense ranking scans that many inverted lists (``None``: exact)."""
    k = require_int("k", k, 1)
    depth = require_int("depth", depth, 1)
    if keyword is None:
        keyword = keyword_index(searcher)
    if keyword.lengths.shape[0] != len(searcher):
        raise ValueError(
            f"keyword: got a BM25 index of {keyword.lengths.shape[0]} passages, expected "
            f"{len(searcher)} (the searcher's); build it with keyword_index(searcher)"
        )
    texts = [queries] if isinstance(queries, str) else list(queries)
    dense = searcher.search(encoder, texts, k=min(depth, len(searcher)), nprobe=nprobe)
    out = []
    for query, hits in zip(texts, dense, strict=True):
        rankings = [[h.row for h in hits], bm25_top(keyword, query, depth)]
        fused = reciprocal_rank_fusion(rankings, rrf_k, top=k)
        out.append([Hit(score, row, *searcher.passage(row)) for row, score in fused])
    return out
