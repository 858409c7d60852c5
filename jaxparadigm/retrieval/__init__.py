"""Keyword vs semantic retrieval with all-MiniLM-L6-v2 rebuilt in Flax NNX (claims C1.1, C1.2).

* :func:`load_minilm` -> :class:`SentenceEncoder` (``encode`` like sentence-transformers)
* :func:`keyword_search` -- the seed's substring matcher and a token-overlap ranker
* :class:`SemanticIndex` -- dot products of normalised embeddings, exact top-k, ``.npz`` save/load
* ``jaxparadigm.retrieval.evaluation`` -- ``run_experiment(cfg)`` and ``format_search`` (imported
  on demand: it pulls in matplotlib)
"""

from jaxparadigm.retrieval.keyword import keyword_search
from jaxparadigm.retrieval.semantic_index import SemanticIndex
from jaxparadigm.retrieval.sentence_encoder import SentenceEncoder, load_minilm

__all__ = ["load_minilm", "SentenceEncoder", "keyword_search", "SemanticIndex"]
