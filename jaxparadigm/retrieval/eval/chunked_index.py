"""Passages of long documents as one dense index, with an on-disk embedding cache (C1.1).

``passage_index(encoder, texts, chunk_words)`` cuts each text into ``chunk_words``-word passages
(:func:`~jaxparadigm.retrieval.eval.pydoc_corpus.chunk_document`, prefixed with the title), embeds
them in a :class:`~jaxparadigm.retrieval.index.memory_index.SemanticIndex` and returns ``owner[j]``,
the text passage ``j`` came from; :func:`max_by_owner` turns passage scores into document scores
(``score(doc) = max_j score(passage j of doc)``).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import warnings
from pathlib import Path

import numpy as np

from jaxparadigm.errors import InputError
from jaxparadigm.retrieval.encoder.sentence_encoder import SentenceEncoder
from jaxparadigm.retrieval.eval.pydoc_corpus import chunk_document, topic_title
from jaxparadigm.retrieval.index.memory_index import SemanticIndex

__all__ = ["passage_index", "max_by_owner"]


def _cache_dir() -> Path:
    root = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(root) / "jaxparadigm" / "retrieval"


def passage_index(
    encoder: SentenceEncoder,
    texts: list[str],
    chunk_words: int,
    batch_size: int = 32,
    cache: bool = False,
) -> tuple[SemanticIndex, np.ndarray]:
    """Index ``chunk_words``-word passages of ``texts``; returns ``(index, owner)`` (C1.1).

    ``owner[j]`` is the document each passage came from. With ``cache=True`` the embeddings are
    kept in the index folder ``$XDG_CACHE_HOME/jaxparadigm/retrieval/<sha256>/`` (keyed by model and
    passages; :meth:`SemanticIndex.save`);
    an entry that fails to load (damaged, stale) is rebuilt and one that cannot be written is
    skipped, each with a warning: the cache is never fatal. Building an entry first prints one
    line to stderr saying so (and where), since it takes minutes.
    """
    passages: list[str] = []
    docs: list[int] = []
    for doc, text in enumerate(texts):
        chunks = chunk_document(text, chunk_words, title=topic_title(text))
        passages += chunks
        docs += [doc] * len(chunks)
    owner = np.asarray(docs, dtype=np.int64)
    if not cache:
        return SemanticIndex(encoder, batch_size).add(passages), owner
    key = hashlib.sha256(
        json.dumps([encoder.max_seq_length, encoder.dim, passages]).encode("utf-8")
    ).hexdigest()[:24]
    path = _cache_dir() / key
    if path.exists():
        try:
            index = SemanticIndex.load(path, encoder, batch_size)
        except InputError as exc:
            warnings.warn(f"embedding cache entry rebuilt: {exc}", stacklevel=2)
        else:
            if index.docs == passages:
                return index, owner
            warnings.warn(
                f"embedding cache entry {path} holds other passages; rebuilt", stacklevel=2
            )
    print(  # before the slow part: the first `jaxparadigm search` would otherwise sit silent
        f"embedding {len(passages)} passages once into the cache {path} (about 2 minutes on 2 CPU "
        "cores; later searches read it) ...",
        file=sys.stderr,
        flush=True,
    )
    index = SemanticIndex(encoder, batch_size).add(passages)
    try:
        index.save(path)
    except (OSError, InputError) as exc:
        warnings.warn(f"embedding cache entry {path} not written ({exc})", stacklevel=2)
    return index, owner


def max_by_owner(scores: np.ndarray, owner: np.ndarray, n_docs: int) -> np.ndarray:
    out = np.full((scores.shape[0], n_docs), -np.inf, dtype=np.float32)
    np.maximum.at(out.T, owner, scores.T)
    return out
