"""Keyword vs semantic retrieval with all-MiniLM-L6-v2 rebuilt in Flax NNX (claims C1.1, C1.2).

* :func:`load_minilm` -> :class:`SentenceEncoder` (``encode`` like sentence-transformers)
* :func:`keyword_search` -- the seed's substring matcher and a token-overlap ranker
* :class:`SemanticIndex` (``memory_index``) -- an in-memory index: documents embedded once, exact
  top-k of ``q . d``; save/load an index folder
* ``ranking_metrics`` (recall@k, MRR), ``pydoc_corpus`` + ``chunked_index`` (the pydoc topics cut
  into passages, their embeddings cached); the evaluation task and the CLI text live in
  ``jaxparadigm.app``
* a persistent index of a user's files: ``document_files`` (files and folders -> documents, skipped
  inputs by reason; ``readable_text`` for HTML/Markdown), ``passages`` (token windows),
  ``index_store`` (the on-disk format: manifest + checksummed shard files; ``manifest_schema``),
  ``index_owned_files`` (the lock, the writer's own file names: no link followed, nothing else
  deleted), ``index_progress`` (a bar on a terminal, plain lines elsewhere), ``index_writer`` (the one writer: ``write_rows``, ``write_snapshot``),
  ``index_build`` (build/add/resume), :class:`Index` (``index``: the one reader, a folder opened
  and checked)
* one search engine, ``vector_search.VectorSearcher`` (streaming, multi-device exact top-k;
  bfloat16/int8 + rescoring), behind :class:`IndexSearcher` (``index_searcher``: ``search
  --index``, ``search_vectors``), :class:`SemanticIndex` and the HTTP service
* approximate search (issue 38): ``kmeans`` (the coarse quantiser, in JAX), ``ivf_store`` (the
  inverted lists' checked files), ``ivf_build`` (:func:`train_ivf`: ``index ivf``; ``extend_ivf``
  for ``index add``), ``ivf_search`` (:class:`IVFSearcher`: probe ``nprobe`` lists, scan them
  exactly), used by ``IndexSearcher.search(..., nprobe=P)`` / ``search_vectors``
* ``http_service.SearchService`` (the traced HTTP service, ``search_request`` its request checks)
  and ``serve_command.serve_index`` -- ``jaxparadigm serve``: that service over an index folder
* relevance (measured by benchmarks/relevance_bench.py): ``bm25`` (:func:`bm25_index`,
  :func:`bm25_scores`, :func:`bm25_top`), :func:`reciprocal_rank_fusion`, :func:`hybrid_search`
  (BM25 + dense, fused) with :func:`keyword_index`, ``excerpt`` (:func:`best_excerpt`,
  :func:`mark_text`) and ``search_results.search_with_excerpts`` -- what ``search --index`` runs
  (hybrid by default; each hit's cosine and best excerpt) -- with ``search_response``, serve's JSON
"""

from jaxparadigm.retrieval.bm25 import BM25Index, bm25_index, bm25_scores, bm25_top
from jaxparadigm.retrieval.excerpt import Excerpt, best_excerpt, mark_text
from jaxparadigm.retrieval.hybrid_search import hybrid_search, keyword_index
from jaxparadigm.retrieval.index import Index
from jaxparadigm.retrieval.index_build import add_to_index, build_index
from jaxparadigm.retrieval.index_searcher import Hit, IndexSearcher
from jaxparadigm.retrieval.ivf_build import train_ivf
from jaxparadigm.retrieval.ivf_search import IVFSearcher
from jaxparadigm.retrieval.keyword import keyword_search
from jaxparadigm.retrieval.memory_index import SemanticIndex
from jaxparadigm.retrieval.rank_fusion import reciprocal_rank_fusion
from jaxparadigm.retrieval.search_results import (
    ScoredHit,
    search_response,
    search_with_excerpts,
)
from jaxparadigm.retrieval.sentence_encoder import SentenceEncoder, load_minilm
from jaxparadigm.retrieval.vector_search import TopK, VectorSearcher

__all__ = [
    "load_minilm",
    "SentenceEncoder",
    "keyword_search",
    "SemanticIndex",
    "build_index",
    "add_to_index",
    "Index",
    "IndexSearcher",
    "Hit",
    "train_ivf",
    "IVFSearcher",
    "VectorSearcher",
    "TopK",
    "reciprocal_rank_fusion",
    "bm25_index",
    "bm25_scores",
    "bm25_top",
    "BM25Index",
    "hybrid_search",
    "keyword_index",
    "best_excerpt",
    "Excerpt",
    "mark_text",
    "search_with_excerpts",
    "search_response",
    "ScoredHit",
]
