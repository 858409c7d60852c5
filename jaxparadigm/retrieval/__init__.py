"""Search a user's documents: keyword, dense and hybrid retrieval, MiniLM in Flax NNX (C1.1, C1.2).

The package is in rooms, each importing only from the rooms below it:

* ``service`` -- the HTTP search service, its request checks, request batching, the search page
* ``ranking`` -- rank fusion, hybrid search, excerpts, the search pipeline; ``eval`` -- metrics
  and the pydoc corpus
* ``index`` -- index folders: format, reader, writer, build, IVF lists, the searcher, the
  process group, the in-memory :class:`SemanticIndex`
* ``dense`` (exact and IVF top-k), ``sparse`` (BM25, keyword baselines), ``encoder`` (MiniLM),
  ``documents`` (files and folders to passages)
* ``search_options`` -- :class:`SearchOptions`, one search's options (mode, k, nprobe, ...), the
  same through every door: ``search --index``, the library, ``serve``'s body, the search page

The names below are the public surface; everything else is reached through its room.
"""

from jaxparadigm.retrieval.dense.ivf_search import IVFSearcher
from jaxparadigm.retrieval.dense.vector_search import TopK, VectorSearcher
from jaxparadigm.retrieval.encoder.sentence_encoder import SentenceEncoder, load_minilm
from jaxparadigm.retrieval.index.build import add_to_index, build_index
from jaxparadigm.retrieval.index.ivf_build import train_ivf
from jaxparadigm.retrieval.index.memory_index import SemanticIndex
from jaxparadigm.retrieval.index.reader import Index
from jaxparadigm.retrieval.index.searcher import Hit, IndexSearcher
from jaxparadigm.retrieval.ranking.excerpt import Excerpt, best_excerpt, mark_text
from jaxparadigm.retrieval.ranking.hybrid_search import hybrid_search, keyword_index
from jaxparadigm.retrieval.ranking.rank_fusion import reciprocal_rank_fusion
from jaxparadigm.retrieval.ranking.search_results import (
    ScoredHit,
    search_response,
    search_with_excerpts,
)
from jaxparadigm.retrieval.search_options import SearchOptions
from jaxparadigm.retrieval.sparse.bm25 import BM25Index, bm25_index, bm25_scores, bm25_top
from jaxparadigm.retrieval.sparse.keyword import keyword_search

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
    "SearchOptions",
]
