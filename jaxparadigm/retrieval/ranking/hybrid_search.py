"""Hybrid search of an index: BM25 and dense rankings fused by reciprocal rank fusion (C1.1).

For each query, the dense ranking is the index's top ``depth`` by cosine
(:meth:`~jaxparadigm.retrieval.index.searcher.IndexSearcher.search`), the keyword ranking the top
``depth`` by :mod:`~jaxparadigm.retrieval.sparse.bm25` over the same passages, each read with its
stored context (file name, section titles or enclosing class/def:
:mod:`~jaxparadigm.retrieval.documents.outline`) and cut into identifier-aware words
(:func:`~jaxparadigm.retrieval.sparse.bm25.bm25_words`); the result is their weighted
:func:`~jaxparadigm.retrieval.ranking.rank_fusion.reciprocal_rank_fusion`, best first:

    score(row) = w_dense / (60 + dense rank) + w_bm25 / (60 + BM25 rank)   (a missing rank adds 0)

so a returned :class:`~jaxparadigm.retrieval.index.searcher.Hit`'s ``score`` is that fused score,
not a cosine. **The defaults come from benchmarks/relevance_bench.py** (RESULTS.md, "Passages that
know where they are"; 70 questions on four kinds of installed third-party text: prose guides,
release notes, source code with docstrings, an HTML manual; 254-word-piece windows). The rule
(``relevance_variants.keeps``): a change is kept when no kind answers fewer questions in the top 3
or in the top 10, and overall it answers more in the top 3, or as many with a higher MRR.

* keyword side: context + identifier words: 52/70 in the top 3 (MRR 0.629, recall@10 0.89)
  against 51/70 (0.624, 0.87) before; no kind fewer (source code 21 -> 22 of 31).
* ``FUSION_WEIGHTS = (1, 1)``, ``rrf_k = 60``: of weighted RRF (dense 1-4 : 1, k 10/30/60) and
  min-max score fusion (alpha 0.3-0.8) over the same rankings none is kept: a heavier dense
  weight costs the HTML manual or the prose guides top-3 answers (RRF 2:1: 10/15 and 10/12
  against 11/15 and 11/12), and min-max at alpha 0.6, level overall (52/70, MRR 0.642), answers
  one HTML-manual question fewer in the top 10 (13 -> 12 of 15).
* the context is not encoded: encoding ``context + text`` cost the dense ranking 6 of 70 (45 ->
  39) and the fused one 2 to 4.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from jaxparadigm.retrieval.documents.outline import with_context
from jaxparadigm.retrieval.index.searcher import Hit, IndexSearcher
from jaxparadigm.retrieval.ranking.rank_fusion import reciprocal_rank_fusion
from jaxparadigm.retrieval.search_options import SearchOptions
from jaxparadigm.retrieval.sparse.bm25 import BM25Index, bm25_index, bm25_top

if TYPE_CHECKING:
    from jaxparadigm.retrieval.encoder.sentence_encoder import SentenceEncoder

__all__ = ["FUSION_WEIGHTS", "RRF_K", "fused_ranking", "keyword_index", "hybrid_search"]

#: The rank offset of the fusion: score(row) = sum of w / (RRF_K + rank).
RRF_K = 60

#: ``(w_dense, w_bm25)``: the weights of the dense and keyword rankings (module docstring: the
#: bench keeps equal weights).
FUSION_WEIGHTS: tuple[float, float] = (1.0, 1.0)


def keyword_index(searcher: IndexSearcher, **bm25_params: Any) -> BM25Index:
    """The :func:`~jaxparadigm.retrieval.sparse.bm25.bm25_index` of every passage of ``searcher``'s
    index, row order, each with its stored context (file name and section titles; ``""`` for an
    index built without: :func:`~jaxparadigm.retrieval.documents.outline.with_context`), reading
    every shard's passages once. Refused for a search split over processes (each holds only its
    own passages; :meth:`~jaxparadigm.retrieval.search_options.SearchOptions.check_process_group`).
    """
    if searcher.group is not None:
        SearchOptions(mode="hybrid").check_process_group(searcher.group.processes)
    texts = [
        with_context(searcher.index.context(r), searcher.passage(r).text)
        for r in range(len(searcher))
    ]
    return bm25_index(texts, **bm25_params)


def fused_ranking(
    dense_rows: Sequence[int],
    keyword: BM25Index,
    query: str,
    k: int,
    depth: int,
    rrf_k: int = RRF_K,
    weights: tuple[float, float] = FUSION_WEIGHTS,
) -> list[tuple[int, float]]:
    """The top ``k`` ``(row, score)`` of one query (module docstring): the dense ranking
    ``dense_rows`` (its top ``depth``, best first) fused with ``keyword``'s BM25 top ``depth``,
    ``weights`` = ``(w_dense, w_bm25)``."""
    rankings = [list(dense_rows)[:depth], bm25_top(keyword, query, depth)]
    return reciprocal_rank_fusion(rankings, rrf_k, top=k, weights=weights)


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
    weights: tuple[float, float] = FUSION_WEIGHTS,
) -> list[list[Hit]]:
    """The top ``k`` fused hits of each query (module docstring), best first; ``keyword`` is the
    index's :func:`keyword_index` (built here when None: pass it to search repeatedly).
    ``options``: a :class:`SearchOptions` (its ``k``, ``depth``, ``nprobe``: the dense ranking
    scans that many inverted lists); or the keywords ``k`` (default 10), ``depth`` (default 100)
    and ``nprobe`` (None: exact), not both. ``weights``: ``(w_dense, w_bm25)`` of the fusion
    (:data:`FUSION_WEIGHTS`)."""
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
            [h.row for h in hits], keyword, query, options.k, options.depth, rrf_k, weights
        )
        out.append([Hit(score, row, searcher.passage(row)) for row, score in fused])
    return out
