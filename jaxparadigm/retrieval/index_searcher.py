"""Search a persistent index folder: open it (checksums first), place, top-k, passages (C1.1).

``IndexSearcher(index_dir)`` opens the folder as an :class:`~jaxparadigm.retrieval.index.Index`
(manifest, every shard's sha256, unit rows, memory-mapped float32 embeddings) and hands the rows to
the package's one search engine, :class:`~jaxparadigm.retrieval.vector_search.VectorSearcher`
(exact float32 by default; ``dtype="bfloat16"``/``"int8"`` keeps a compact copy and rescores the
candidates from the float32 rows). ``search(encoder, queries, k)`` returns, per query, the best
:class:`Hit` first: ``score = cos(query, passage)`` with the passage's source, offsets and text;
``search_vectors(queries, k)`` searches given vectors, ``s[i, r] = Q_i . X_r``, as a
:class:`~jaxparadigm.retrieval.vector_search.TopK`. A shard's passages are read (and checked) only
when one of its rows is a hit.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

import jax
import numpy as np

from jaxparadigm.errors import InputError, require_int
from jaxparadigm.retrieval.index import Index
from jaxparadigm.retrieval.index_build import DEFAULT_MODEL_NAME
from jaxparadigm.retrieval.passages import Passage
from jaxparadigm.retrieval.vector_search import RowSource, TopK, VectorSearcher

if TYPE_CHECKING:
    from jaxparadigm.retrieval.sentence_encoder import SentenceEncoder

__all__ = ["Hit", "IndexSearcher"]


class Hit(NamedTuple):
    """One result: cosine ``score``, corpus ``row`` and the passage it holds."""

    score: float
    row: int
    source: str
    start: int
    end: int
    text: str


class IndexSearcher:
    """An opened index folder, ready for top-k search on ``devices`` (C1.1)."""

    def __init__(
        self,
        index_dir: str | os.PathLike,
        *,
        dtype: str = "float32",
        devices: Sequence[jax.Device] | None = None,
        block_rows: int = 8192,
        resident: bool = True,
        verify: bool = True,
    ) -> None:
        self.index = Index(index_dir, verify=verify)
        self.index_dir = self.index.path
        self.manifest = self.index.manifest
        self.source = RowSource(self.index.shard_arrays)
        self.vectors = VectorSearcher(
            self.source, dtype=dtype, devices=devices, block_rows=block_rows, resident=resident
        )

    def __len__(self) -> int:
        return self.source.rows

    def check_encoder(self, encoder: SentenceEncoder, model_name: str = DEFAULT_MODEL_NAME) -> None:
        """Refuse an encoder other than the one the index was built with (name, dim, length)."""
        want = self.manifest["model"]
        got = {"name": model_name, "dim": encoder.dim, "max_seq_length": encoder.max_seq_length}
        if got != want:
            raise InputError(f"{self.index_dir}: index was built with {want}, encoder is {got}")

    def passage(self, row: int) -> Passage:
        """The passage stored at corpus ``row`` (its shard's passages are read once, checked)."""
        return self.index.passage(row)

    def hits(self, top: TopK) -> list[list[Hit]]:
        """:class:`Hit` lists (best first) for a :class:`TopK` of this index."""
        return [
            [Hit(float(s), int(r), *self.passage(int(r))) for s, r in zip(srow, rrow, strict=True)]
            for srow, rrow in zip(top.scores, top.ids, strict=True)
        ]

    def search_vectors(self, queries: np.ndarray, k: int, nprobe: int | None = None) -> TopK:
        """Exact top ``k`` rows for each row of ``queries`` (float ``[n, dim]``), best first.

        ``score[i, j] = queries[i] . X[ids[i, j]]`` (float32), ties to the lower row id: the same
        engine as :meth:`search` (this searcher's dtype and devices), with no encoder. ``nprobe``
        (how many inverted lists to scan) is for an IVF index; this index format has no inverted
        lists, so any ``nprobe`` other than ``None`` is refused with a ``ValueError``.
        """
        if nprobe is not None:
            raise InputError(
                f"nprobe: got {nprobe!r}, but {self.index_dir} has no IVF lists (an exact index); "
                "expected nprobe=None"
            )
        if not isinstance(queries, np.ndarray | jax.Array):
            raise TypeError(
                f"queries: got {type(queries).__name__}, expected a float32 array [n, {self.index.dim}]"
            )
        if not np.issubdtype(queries.dtype, np.floating):
            raise TypeError(
                f"queries: got dtype {queries.dtype}, expected a float32 array [n, {self.index.dim}]"
            )
        if queries.ndim != 2 or queries.shape[1] != self.index.dim or queries.shape[0] < 1:
            raise InputError(
                f"queries: got shape {tuple(queries.shape)}, expected (n, {self.index.dim}) with "
                "n >= 1 (the index's dimension)"
            )
        q = np.asarray(queries, np.float32)
        if not np.all(np.isfinite(q)):
            bad = int(np.flatnonzero(~np.all(np.isfinite(q), axis=1))[0])
            raise InputError(f"queries: row {bad} holds NaN or inf, expected finite values")
        require_int("k", k, 1)
        return self.vectors.search(q, k)

    def search(
        self,
        encoder: SentenceEncoder,
        queries: str | Sequence[str],
        k: int = 10,
        *,
        approx: bool = False,
        recall_target: float = 0.95,
        model_name: str = DEFAULT_MODEL_NAME,
    ) -> list[list[Hit]]:
        """Encode ``queries`` with ``encoder`` and return the top ``k`` hits of each, best first.

        A query the tokenizer finds no word piece in is refused (``SentenceEncoder.check_texts``).
        """
        self.check_encoder(encoder, model_name)
        texts = [queries] if isinstance(queries, str) else list(queries)
        encoder.check_texts(texts, "queries")  # no word piece: InputError; only [UNK]: a warning
        q = np.asarray(encoder.encode(texts, normalize=True), np.float32).reshape(len(texts), -1)
        top = self.vectors.search(q, k, approx=approx, recall_target=recall_target)
        return self.hits(top)
