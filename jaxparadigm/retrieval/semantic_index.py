"""``SemanticIndex``: dense retrieval by dot products of L2-normalised embeddings (C1.1, C1.2).

Documents are embedded once with a :class:`SentenceEncoder` (normalised, so ``|d| = 1``); a query
``q`` scores every document with ``s = D q`` -- which *is* the cosine similarity, not an
approximation of it, up to float32 rounding (C1.2) -- and ``jax.lax.top_k`` returns the exact top
``k``. ``save``/``load`` use a numpy ``.npz`` holding only numeric and unicode arrays (no pickle);
``save`` writes a temporary file and renames it over the target, and ``load`` refuses a damaged
file (empty, truncated, bit-flipped: the zip CRC-32 catches flips in the data) and embeddings that
are not finite unit vectors -- for those ``q . d`` is not the cosine (scores of 41 came back).

Documents and queries without any word piece (empty, whitespace, NUL) are refused, and a text made
only of ``[UNK]`` word pieces is searched with a warning (``SentenceEncoder.check_texts``).
"""

from __future__ import annotations

import functools
import os
import tokenize
import uuid
import zipfile
import zlib
from collections.abc import Sequence
from pathlib import Path

import chex
import jax
import jax.numpy as jnp
import numpy as np

from jaxparadigm.errors import InputError, require_int
from jaxparadigm.retrieval.sentence_encoder import SentenceEncoder

__all__ = ["SemanticIndex", "UNIT_NORM_TOLERANCE"]

# A loaded embedding must have | |d| - 1 | <= this: float32 normalisation gives ~1e-7, so only a
# damaged or foreign file fails it (then q . d would not be the cosine, C1.2).
UNIT_NORM_TOLERANCE = 1e-3

# What np.load raised when every bit of a saved index was flipped in turn and it was cut at every
# 7th byte: bad zip or CRC (BadZipFile), cut short (EOFError, ValueError), a flipped compression
# method (NotImplementedError, zlib.error), a broken .npy header (TokenError, SyntaxError), a
# flipped "encrypted" flag (RuntimeError).
_DAMAGED = (ValueError, KeyError, OSError, EOFError, zipfile.BadZipFile, zlib.error,
            NotImplementedError, SyntaxError, tokenize.TokenError, RuntimeError)  # fmt: skip


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

    def scores(self, queries: Sequence[str]) -> np.ndarray:
        """``[n_queries, n_docs]`` float32 matrix of ``q . d`` (cosine similarities, C1.2)."""
        if isinstance(queries, str):
            raise TypeError("queries: got str, expected a list of str (use search for one query)")
        self._require_docs()
        self.encoder.check_texts(queries, "queries")
        q = self.encoder.encode(list(queries), batch_size=self.batch_size, normalize=True)
        return np.asarray(_scores(self._device_embs, jnp.asarray(q)))

    def search(self, query: str, top_k: int = 5) -> list[tuple[int, float]]:
        """Exact top ``k`` documents for ``query`` as ``[(doc_index, cosine)]``, best first (C1.1)."""
        if not isinstance(query, str):
            raise TypeError(f"query: got {type(query).__name__} {query!r}, expected str")
        require_int("top_k", top_k, 1)
        self._require_docs()
        self.encoder.check_texts([query], "query")
        q = self.encoder.encode(query, normalize=True)
        vals, idx = _top_k(self._device_embs, jnp.asarray(q), min(top_k, len(self.docs)))
        return [(int(i), float(v)) for i, v in zip(np.asarray(idx), np.asarray(vals), strict=True)]

    def _require_docs(self) -> None:
        if not self.docs:
            raise InputError("SemanticIndex is empty: call add(docs) before searching")

    def save(self, path: str | os.PathLike) -> Path:
        """Write ``embeddings`` (float32) and ``docs`` (unicode) to an ``.npz``; returns the path.

        The file is written next to ``path`` under a temporary name and renamed over it, so a
        crash mid-write leaves the old file (or none), never a half-written one.
        """
        path = Path(path)
        if path.suffix != ".npz":
            path = path.with_name(path.name + ".npz")
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
        try:
            with open(tmp, "xb") as f:
                np.savez(f, embeddings=self.embeddings, docs=np.array(self.docs, dtype=np.str_))
            os.replace(tmp, path)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        return path

    @classmethod
    def load(
        cls, path: str | os.PathLike, encoder: SentenceEncoder, batch_size: int = 32
    ) -> SemanticIndex:
        """Read an index written by :meth:`save` (``allow_pickle=False``), refusing a bad file.

        ``FileNotFoundError`` when ``path`` is no file; :class:`~jaxparadigm.errors.InputError`
        naming ``path`` and the fault when it is empty, damaged (truncated, bit-flipped), lacks
        ``embeddings``/``docs``, has shapes that do not fit ``encoder``, or holds embeddings that
        are not finite unit vectors (``| |d| - 1 | > UNIT_NORM_TOLERANCE``).
        """
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"{path}: no such file; expected a SemanticIndex .npz")
        embs, docs = _read_npz(path)
        _check_arrays(path, embs, docs, encoder.dim)
        index = cls(encoder, batch_size=batch_size)
        index._append([str(d) for d in docs], embs)
        return index


def _read_npz(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """``(embeddings, docs)`` from ``path``; any fault of the file is an ``InputError`` naming it."""
    if path.stat().st_size == 0:
        raise InputError(f"{path}: empty file (0 bytes); expected a SemanticIndex .npz")
    try:
        data = np.load(path, allow_pickle=False)
        if not isinstance(data, np.lib.npyio.NpzFile):
            raise InputError(f"{path}: holds one .npy array, expected a SemanticIndex .npz")
        with data:
            missing = sorted({"embeddings", "docs"} - set(data.files))
            if missing:
                raise InputError(
                    f"{path}: not a SemanticIndex .npz (no array {', '.join(missing)}); "
                    "expected arrays 'embeddings' and 'docs'"
                )
            return data["embeddings"], data["docs"]
    except InputError:
        raise
    except _DAMAGED as exc:
        raise InputError(
            f"{path}: damaged (truncated or corrupted) or not a SemanticIndex .npz "
            f"({type(exc).__name__}: {exc}); rebuild it with SemanticIndex.save"
        ) from None


def _check_arrays(path: Path, embs: np.ndarray, docs: np.ndarray, dim: int) -> None:
    """The loaded arrays: unicode ``docs [n]``, float32 ``embeddings [n, dim]`` of finite unit rows."""
    if docs.ndim != 1 or docs.dtype.kind != "U":
        raise InputError(
            f"{path}: docs have shape {docs.shape} dtype {docs.dtype}, expected a 1-d unicode array"
        )
    if embs.dtype != np.float32 or embs.ndim != 2 or embs.shape != (len(docs), dim):
        raise InputError(
            f"{path}: embeddings have shape {embs.shape} dtype {embs.dtype}, expected "
            f"float32 ({len(docs)}, {dim})"
        )
    finite = np.isfinite(embs).all(axis=1)
    if not finite.all():
        rows = np.flatnonzero(~finite)
        raise InputError(
            f"{path}: embeddings of {rows.size} document(s) hold NaN/inf (first: row "
            f"{int(rows[0])}); expected finite unit vectors"
        )
    norms = np.linalg.norm(embs.astype(np.float64), axis=1)
    bad = np.flatnonzero(np.abs(norms - 1.0) > UNIT_NORM_TOLERANCE)
    if bad.size:
        raise InputError(
            f"{path}: {bad.size} embedding(s) are not unit vectors (row {int(bad[0])} has norm "
            f"{norms[bad[0]]:.6g}); expected | |d| - 1 | <= {UNIT_NORM_TOLERANCE} (else q . d is "
            "not the cosine)"
        )
