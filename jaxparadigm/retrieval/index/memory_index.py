"""``SemanticIndex``: an in-memory index, dot products of L2-normalised embeddings (C1.1, C1.2).

Documents are embedded once with a :class:`SentenceEncoder` (normalised, so ``|d| = 1``); a query
``q`` scores every document with ``s = D q`` -- which *is* the cosine similarity, not an
approximation of it, up to float32 rounding (C1.2) -- and the package's one search engine,
:class:`~jaxparadigm.retrieval.dense.vector_search.VectorSearcher`, returns the exact top ``k``
(ties to the lower document index), as for an index folder. ``save``/``load`` use the one on-disk
format, the index folder of :mod:`~jaxparadigm.retrieval.index.store` (manifest + checksummed
shards), written by :func:`~jaxparadigm.retrieval.index.writer.write_snapshot` and opened by
:class:`~jaxparadigm.retrieval.index.reader.Index`: ``save`` replaces the manifest atomically, and
``load`` refuses a damaged folder (a missing or empty manifest, a truncated or bit-flipped shard:
its sha256 differs) and embeddings that are not finite unit vectors -- for those ``q . d`` is not
the cosine (scores of 41 came back).

Documents and queries without any word piece (empty, whitespace, NUL) are refused, and a text made
only of ``[UNK]`` word pieces is searched with a warning (``SentenceEncoder.check_texts``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import chex
import jax
import jax.numpy as jnp
import numpy as np

from jaxparadigm.errors import InputError, require_int
from jaxparadigm.retrieval.dense.vector_search import RowSource, TopK, VectorSearcher
from jaxparadigm.retrieval.encoder.sentence_encoder import SentenceEncoder
from jaxparadigm.retrieval.index.build import DEFAULT_MODEL_NAME
from jaxparadigm.retrieval.index.reader import Index
from jaxparadigm.retrieval.index.store import MANIFEST, UNIT_NORM_TOL
from jaxparadigm.retrieval.index.writer import write_snapshot

__all__ = ["SemanticIndex", "UNIT_NORM_TOLERANCE"]

# A loaded embedding must have | |d| - 1 | <= this: float32 normalisation gives ~1e-7, so only a
# damaged or foreign file fails it (then q . d would not be the cosine, C1.2).
UNIT_NORM_TOLERANCE = UNIT_NORM_TOL


@jax.jit
def _scores(doc_embs: jax.Array, query_embs: jax.Array) -> jax.Array:
    return query_embs @ doc_embs.T


class SemanticIndex:
    """An in-memory dense index over documents embedded by ``encoder`` (C1.1).

    ``add(docs)`` appends documents; ``search(query, top_k)`` returns ``[(doc_index, score)]`` best
    first with ``score = cos(q, d) = q . d``; ``scores(queries)`` gives the full ``[n_q, n_docs]``
    matrix; ``save(path)`` / ``SemanticIndex.load(path, encoder)`` round-trip through an index
    folder (manifest + checksummed shards); ``from_rows`` wraps embeddings computed elsewhere.
    """

    def __init__(self, encoder: SentenceEncoder, batch_size: int = 32) -> None:
        if not isinstance(encoder, SentenceEncoder):
            raise TypeError(f"encoder: got {type(encoder).__name__}, expected a SentenceEncoder")
        self.encoder = encoder
        self.batch_size = batch_size
        self.docs: list[str] = []
        self.embeddings = np.zeros((0, encoder.dim), dtype=np.float32)

    def __len__(self) -> int:
        return len(self.docs)

    def add(self, docs: Sequence[str]) -> SemanticIndex:
        """Embed ``docs`` (normalised) and append them; returns ``self``."""
        if isinstance(docs, str) or not isinstance(docs, Sequence):
            raise TypeError(f"docs: got {type(docs).__name__}, expected a list of str")
        self.encoder.check_texts(docs, "docs")
        embs = self.encoder.encode(list(docs), batch_size=self.batch_size, normalize=True)
        self._append(list(docs), embs)
        return self

    def _append(self, docs: list[str], embs: np.ndarray) -> None:
        chex.assert_shape(embs, (len(docs), self.encoder.dim))
        chex.assert_type(embs, np.float32)
        self.docs.extend(docs)
        self.embeddings = np.concatenate([self.embeddings, embs], axis=0)
        self._device_embs = jnp.asarray(self.embeddings)
        self._searcher: VectorSearcher | None = None  # placed again on the next search

    def search_vectors(self, queries: np.ndarray, k: int, *, approx: bool = False) -> TopK:
        """Exact top ``k`` documents of each query row (float32 ``[n, dim]``) by ``q . d``, best
        first, ties to the lower index: :meth:`VectorSearcher.search` over the embeddings
        (``approx``: ``lax.approx_max_k`` picks the candidates)."""
        self._require_docs()
        if self._searcher is None:
            self._searcher = VectorSearcher(RowSource([self.embeddings]))
        return self._searcher.search(queries, k, approx=approx)

    def scores(self, queries: Sequence[str]) -> np.ndarray:
        """``[n_queries, n_docs]`` float32 matrix of ``q . d`` (cosine similarities, C1.2)."""
        if isinstance(queries, str):
            raise TypeError("queries: got str, expected a list of str (use search for one query)")
        self._require_docs()
        self.encoder.check_texts(queries, "queries")
        q = self.encoder.encode(list(queries), batch_size=self.batch_size, normalize=True)
        return np.asarray(_scores(self._device_embs, jnp.asarray(q)))

    def search(self, query: str, top_k: int = 5) -> list[tuple[int, float]]:
        """Exact top ``k`` documents for ``query``: ``[(doc_index, cosine)]``, best first (C1.1)."""
        if not isinstance(query, str):
            raise TypeError(f"query: got {type(query).__name__} {query!r}, expected str")
        top_k = require_int("top_k", top_k, 1)
        self._require_docs()
        self.encoder.check_texts([query], "query")
        q = self.encoder.encode(query, normalize=True)
        top = self.search_vectors(np.asarray(q, np.float32).reshape(1, -1), top_k)
        return [(int(i), float(v)) for i, v in zip(top.ids[0], top.scores[0], strict=True)]

    def _require_docs(self) -> None:
        if not self.docs:
            raise InputError("SemanticIndex is empty: call add(docs) before searching")

    @classmethod
    def from_rows(
        cls,
        encoder: SentenceEncoder,
        docs: Sequence[str],
        embeddings: np.ndarray,
        batch_size: int = 32,
    ) -> SemanticIndex:
        """An index over ``docs`` whose L2-normalised ``embeddings [len(docs), dim]`` (float32)
        were computed by ``encoder``'s model already (a saved index, an index folder)."""
        index = cls(encoder, batch_size=batch_size)
        index._append(list(docs), np.asarray(embeddings))
        return index

    def save(self, path: str | os.PathLike, model_name: str = DEFAULT_MODEL_NAME) -> Path:
        """Write the documents and embeddings as an index folder at ``path``; returns the folder.

        The folder is the one format of ``jaxparadigm index build`` (``model_name`` goes into its
        manifest); an index already there is replaced atomically -- a crash mid-write leaves the
        old index (or none), never a half-written one -- and a folder holding other files is
        refused with :class:`~jaxparadigm.errors.InputError`.
        """
        model = {
            "name": model_name,
            "dim": self.encoder.dim,
            "max_seq_length": self.encoder.max_seq_length,
        }
        return write_snapshot(path, model, self.embeddings, self.docs, self.batch_size)

    @classmethod
    def load(
        cls, path: str | os.PathLike, encoder: SentenceEncoder, batch_size: int = 32
    ) -> SemanticIndex:
        """Read an index folder written by :meth:`save` (or ``index build``), refusing damage.

        ``FileNotFoundError`` when ``path`` does not exist; :class:`~jaxparadigm.errors.InputError`
        naming ``path`` and the fault when it is a file, its manifest is missing, empty or damaged,
        a shard is missing, truncated or bit-flipped (its sha256 differs from the manifest's), the
        embeddings do not fit ``encoder``, or are not finite unit vectors
        (``| |d| - 1 | > UNIT_NORM_TOLERANCE``), or the folder holds an interrupted ``index build``
        (all checked by :class:`~jaxparadigm.retrieval.index.reader.Index`). A folder whose
        ``index add`` was interrupted loads the passages indexed before it, with a warning, as
        search does.
        """
        path = Path(path)
        if not path.exists():
            raise FileNotFoundError(f"{path}: no such folder; expected a saved index")
        if not path.is_dir():
            raise InputError(f"{path}: a file, not a saved index (a folder with {MANIFEST})")
        index = Index(path)
        if index.dim != encoder.dim:
            raise InputError(
                f"{path}: embeddings have dimension {index.dim}, expected {encoder.dim} "
                "(the encoder's)"
            )
        docs = [p.text for p in index.passages()]
        return cls.from_rows(encoder, docs, index.embeddings(), batch_size)
