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

from jaxparadigm.retrieval.index.searcher import Hit, IndexSearcher
from jaxparadigm.retrieval.ranking.rank_fusion import reciprocal_rank_fusion
from jaxparadigm.retrieval.search_options import SearchOptions
from jaxparadigm.retrieval.sparse.bm25 import BM25Index, bm25_index, bm25_top

if TYPE_CHECKING:
    from jaxparadigm.retrieval.encoder.sentence_encoder import SentenceEncoder

__all__ = ["RRF_K", "fused_ranking", "keyword_index", "hybrid_search"]

#: The rank offset of the fusion: score(row) = sum of 1 / (RRF_K + rank).
RRF_K = 60


def keyword_index(searcher: IndexSearcher, **bm25_params: float) -> BM25Index:
    """The :func:`~jaxparadigm.retrieval.sparse.bm25.bm25_index` of every passage of ``searcher``'s index,
    row order (reads every shard's passages once). Refused for a search split over processes
    (each holds only its own passages;
    :meth:`~jaxparadigm.retrieval.search_options.SearchOptions.check_process_group`)."""
    if searcher.group is not None:
        SearchOptions(mode="hybrid").check_process_group(searcher.group.processes)
    return bm25_index([searcher.passage(r).text for r in range(len(searcher))], **bm25_params)


def fused_ranking(
    dense_rows: Sequence[int],
    keyword: BM25Index,
    query: str,
    k: int,
    depth: int,
    rrf_k: int = RRF_K,
) -> list[tuple[int, float]]:
    """The top ``k`` ``(row, score)`` of one query (module docstring): the dense ranking
    ``dense_rows`` (its top ``depth``, best first) fused with ``keyword``'s BM25 top ``depth``."""
    rankings = [list(dense_rows)[:depth], bm25_top(keyword, query, depth)]
    return reciprocal_rank_fusion(rankings, rrf_k, top=k)


def hybrid_search(
    searcher: IndexSearcher,
    encoder: SentenceEncoder,
    queries: str | Sequence[str],
    k: int | None = None,
    *,
    options: SearchOptions | None = None,
    keyword: BM25Index | None = None,
    depth: int | None = None,
    rrf_k: int = RRF_K,
    nprobe: int | None = None,
) -> list[list[Hit]]:
    """The top ``k`` fused hits of each query (module docstring), best first; ``keyword`` is the
    index's :func:`keyword_index` (built here when None: pass it to search repeatedly).
    ``options``: a :class:`SearchOptions` (its ``k``, ``depth``, ``nprobe``: the dense ranking
    scans that many inverted lists); or the keywords ``k`` (default 10), ``depth`` (default 100)
    and ``nprobe`` (None: exact), not both."""
    keywords = {"k": k, "depth": depth, "nprobe": nprobe}
    defaults = {"k": 10, "depth": 100, "nprobe": None}
    options = SearchOptions.from_keywords(options, keywords, defaults, searcher.opened)
    if searcher.group is not None:
        options.check_process_group(searcher.group.processes)
    if keyword is None:
        keyword = keyword_index(searcher)
    if keyword.lengths.shape[0] != len(searcher):
        raise ValueError(
            f"keyword: got a BM25 index of {keyword.lengths.shape[0]} passages, expected "
            f"{len(searcher)} (the searcher's); build it with keyword_index(searcher)"
        )
    texts = [queries] if isinstance(queries, str) else list(queries)
    dense_k = min(options.depth, len(searcher))
    dense_options = SearchOptions.read({"mode": "dense", "k": dense_k}, base=options)
    dense = searcher.search(encoder, texts, options=dense_options)
    out = []
    for query, hits in zip(texts, dense, strict=True):
        fused = fused_ranking(
            [h.row for h in hits], keyword, query, options.k, options.depth, rrf_k
        )
        out.append([Hit(score, row, searcher.passage(row)) for row, score in fused])
    return out
