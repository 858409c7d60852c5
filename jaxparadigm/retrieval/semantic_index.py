"""``SemanticIndex``: dense retrieval by dot products of L2-normalised embeddings (C1.1, C1.2).

Documents are embedded once with a :class:`SentenceEncoder` (normalised, so ``|d| = 1``); a query
``q`` scores every document with ``s = D q`` -- which *is* the cosine similarity, not an
approximation of it, up to float32 rounding (C1.2) -- and ``jax.lax.top_k`` returns the exact top
``k``. ``save``/``load`` use a numpy ``.npz`` holding only numeric and unicode arrays (no pickle).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from pathlib import Path

import chex
import jax
import jax.numpy as jnp
import numpy as np

from jaxparadigm.retrieval.sentence_encoder import SentenceEncoder

__all__ = ["SemanticIndex"]


@jax.jit
def _scores(doc_embs: jax.Array, query_embs: jax.Array) -> jax.Array:
    return query_embs @ doc_embs.T


@functools.partial(jax.jit, static_argnums=2)
def _top_k(doc_embs: jax.Array, query_emb: jax.Array, k: int) -> tuple[jax.Array, jax.Array]:
    return jax.lax.top_k(doc_embs @ query_emb, k)


class SemanticIndex:
    """An in-memory dense index over documents embedded by ``encoder`` (C1.1).

    ``add(docs)`` appends documents; ``search(query, top_k)`` returns ``[(doc_index, score)]`` best
    first with ``score = cos(q, d) = q . d``; ``scores(queries)`` gives the full ``[n_q, n_docs]``
    matrix; ``save(path)`` / ``SemanticIndex.load(path, encoder)`` round-trip through ``.npz``.
    """

    def __init__(self, encoder: SentenceEncoder, batch_size: int = 32):
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
        embs = self.encoder.encode(list(docs), batch_size=self.batch_size, normalize=True)
        self._append(list(docs), embs)
        return self

    def _append(self, docs: list[str], embs: np.ndarray) -> None:
        chex.assert_shape(embs, (len(docs), self.encoder.dim))
        chex.assert_type(embs, np.float32)
        self.docs.extend(docs)
        self.embeddings = np.concatenate([self.embeddings, embs], axis=0)
        self._device_embs = jnp.asarray(self.embeddings)

    def scores(self, queries: Sequence[str]) -> np.ndarray:
        """``[n_queries, n_docs]`` float32 matrix of ``q . d`` (cosine similarities, C1.2)."""
        if isinstance(queries, str):
            raise TypeError("queries: got str, expected a list of str (use search for one query)")
        self._require_docs()
        q = self.encoder.encode(list(queries), batch_size=self.batch_size, normalize=True)
        return np.asarray(_scores(self._device_embs, jnp.asarray(q)))

    def search(self, query: str, top_k: int = 5) -> list[tuple[int, float]]:
        """Exact top ``k`` documents for ``query`` as ``[(doc_index, cosine)]``, best first (C1.1)."""
        if not isinstance(query, str):
            raise TypeError(f"query: got {type(query).__name__} {query!r}, expected str")
        if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
            raise ValueError(f"top_k: got {top_k!r}, expected an int >= 1")
        self._require_docs()
        q = self.encoder.encode(query, normalize=True)
        vals, idx = _top_k(self._device_embs, jnp.asarray(q), min(top_k, len(self.docs)))
        return [(int(i), float(v)) for i, v in zip(np.asarray(idx), np.asarray(vals), strict=True)]

    def _require_docs(self) -> None:
        if not self.docs:
            raise ValueError("SemanticIndex is empty: call add(docs) before searching")

    def save(self, path: str | os.PathLike) -> Path:
        """Write ``embeddings`` (float32) and ``docs`` (unicode) to an ``.npz``; returns the path."""
        path = Path(path)
        if path.suffix != ".npz":
            path = path.with_name(path.name + ".npz")
        path.parent.mkdir(parents=True, exist_ok=True)
        np.savez(path, embeddings=self.embeddings, docs=np.array(self.docs, dtype=np.str_))
        return path

    @classmethod
    def load(
        cls, path: str | os.PathLike, encoder: SentenceEncoder, batch_size: int = 32
    ) -> SemanticIndex:
        """Read an index written by :meth:`save` (``allow_pickle=False``); checks shapes vs ``encoder``."""
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"{path}: no such file; expected a SemanticIndex .npz")
        try:
            with np.load(path, allow_pickle=False) as data:
                embs, docs = data["embeddings"], data["docs"]
        except (ValueError, KeyError, OSError) as exc:
            raise ValueError(
                f"{path}: not a SemanticIndex .npz ({exc}); expected arrays 'embeddings' and 'docs'"
            ) from None
        index = cls(encoder, batch_size=batch_size)
        if embs.dtype != np.float32 or embs.ndim != 2 or embs.shape != (len(docs), encoder.dim):
            raise ValueError(
                f"{path}: embeddings have shape {embs.shape} dtype {embs.dtype}, expected "
                f"float32 ({len(docs)}, {encoder.dim})"
            )
        index._append([str(d) for d in docs], embs)
        return index
