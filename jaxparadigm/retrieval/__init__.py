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
* ``http_service.SearchService`` (the traced HTTP service, ``search_request`` its request checks)
  and ``serve_command.serve_index`` -- ``jaxparadigm serve``: that service over an index folder
"""

from jaxparadigm.retrieval.index import Index
from jaxparadigm.retrieval.index_build import add_to_index, build_index
from jaxparadigm.retrieval.index_searcher import Hit, IndexSearcher
from jaxparadigm.retrieval.keyword import keyword_search
from jaxparadigm.retrieval.memory_index import SemanticIndex
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
    "VectorSearcher",
    "TopK",
]
