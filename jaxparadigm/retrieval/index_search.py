"""Search a persistent index directory: load (checksums first), place, top-k, passages (C1.1).

``IndexSearcher(index_dir)`` verifies every shard's sha256 against the manifest, memory-maps the
float32 embeddings and hands them to a :class:`~jaxparadigm.retrieval.topk_search.VectorSearcher`
(exact float32 by default; ``dtype="bfloat16"``/``"int8"`` keeps a compact copy and rescores the
candidates from the float32 rows). ``search(encoder, queries, k)`` returns, per query, the best
:class:`Hit` first: ``score = cos(query, passage)`` with the passage's source, offsets and text.
A shard's passages are read (and checked) only when one of its rows is a hit.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import jax
import numpy as np

from jaxparadigm.errors import InputError
from jaxparadigm.retrieval.index_build import DEFAULT_MODEL_NAME
from jaxparadigm.retrieval.index_store import (
    committed,
    read_manifest,
    shard_embeddings,
    shard_passages,
)
from jaxparadigm.retrieval.passages import Passage
from jaxparadigm.retrieval.topk_search import RowSource, TopK, VectorSearcher

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
    """A loaded index directory, ready for top-k search on ``devices`` (C1.1)."""

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
        self.index_dir = Path(index_dir)
        m = read_manifest(self.index_dir)
        if m["pending"] and "base" in m["pending"]:
            warnings.warn(
                f"{self.index_dir}: an `index add` is running or was interrupted; searching the "
                f"{m['pending']['base']['count']} passages indexed before it",
                stacklevel=2,
            )
            m = committed(m)
        self.manifest = m
        if m["status"] != "complete":
            raise InputError(
                f"{self.index_dir}: the build was interrupted ({m['count']} of "
                f"{m['pending']['start_row'] + m['pending']['rows']} passages written); rerun the "
                "same `jaxparadigm index build`/`add` command to resume it"
            )
        dim = m["model"]["dim"]
        self._shards = m["shards"]
        self._passages: dict[int, list[Passage]] = {}
        self._verify = verify
        self.source = RowSource(
            [shard_embeddings(self.index_dir, s, dim, verify=verify) for s in self._shards]
        )
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
        size = self.manifest["shard_rows"]
        j = row // size
        if j not in self._passages:
            self._passages[j] = shard_passages(self.index_dir, self._shards[j], verify=self._verify)
        return self._passages[j][row % size]

    def hits(self, top: TopK) -> list[list[Hit]]:
        """:class:`Hit` lists (best first) for a :class:`TopK` of this index."""
        return [
            [Hit(float(s), int(r), *self.passage(int(r))) for s, r in zip(srow, rrow, strict=True)]
            for srow, rrow in zip(top.scores, top.ids, strict=True)
        ]

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
