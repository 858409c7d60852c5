"""The MiniLM encoder and the pydoc-topics index shared by the retrieval claims (C1.1, C5.2).

Built once per process: loading the weights and encoding the 79 topics is the slow part of both.
"""

from __future__ import annotations

import functools

from jaxparadigm.retrieval import SemanticIndex, load_minilm
from jaxparadigm.retrieval.encoder.sentence_encoder import SentenceEncoder
from jaxparadigm.retrieval.eval.pydoc_corpus import read_corpus


@functools.cache
def minilm_encoder() -> SentenceEncoder:
    """The all-MiniLM-L6-v2 ``SentenceEncoder`` from the installed weights package."""
    return load_minilm()


@functools.cache
def pydoc_index() -> tuple[list[str], list[str], SemanticIndex]:
    """(names, texts, SemanticIndex) of the pydoc topics (first 256 tokens of each)."""
    names, texts = read_corpus("pydoc")
    return names, texts, SemanticIndex(minilm_encoder()).add(texts)
