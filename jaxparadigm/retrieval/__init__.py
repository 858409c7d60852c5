"""Keyword vs semantic retrieval with all-MiniLM-L6-v2 rebuilt in Flax NNX (claims C1.1, C1.2).

* :func:`load_minilm` -> :class:`SentenceEncoder` (``encode`` like sentence-transformers)
* :func:`keyword_search` -- the seed's substring matcher and a token-overlap ranker
* :class:`SemanticIndex` -- dot products of normalised embeddings, exact top-k; save/load an index
  folder (``index_snapshot``: the one on-disk format, below)
* ``ranking_metrics`` (recall@k, MRR), ``pydoc_corpus`` + ``passage_index`` (the pydoc topics and their
  cached passage index); the evaluation task and the CLI text live in ``jaxparadigm.app``
* a persistent index of a user's files: ``document_files`` (files and folders -> documents, skipped
  inputs by reason; ``readable_text`` for HTML/Markdown), ``passages`` (token windows),
  ``index_store`` (manifest + checksummed shards, lock; ``manifest_schema``), ``index_build``
  (build/add/resume), ``index_search.IndexSearcher`` over
  ``topk_search.VectorSearcher`` (streaming, multi-device exact top-k; bfloat16/int8 + rescoring)
* ``index_service.serve_index`` -- ``jaxparadigm serve``: the HTTP service over an index directory
"""

from jaxparadigm.retrieval.index_build import add_to_index, build_index
from jaxparadigm.retrieval.index_search import Hit, IndexSearcher
from jaxparadigm.retrieval.keyword import keyword_search
from jaxparadigm.retrieval.semantic_index import SemanticIndex
from jaxparadigm.retrieval.sentence_encoder import SentenceEncoder, load_minilm
from jaxparadigm.retrieval.topk_search import TopK, VectorSearcher

__all__ = [
    "load_minilm",
    "SentenceEncoder",
    "keyword_search",
    "SemanticIndex",
    "build_index",
    "add_to_index",
    "IndexSearcher",
    "Hit",
    "VectorSearcher",
    "TopK",
]
