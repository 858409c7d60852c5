"""``Index``: one index folder opened for reading -- manifest, shards, checksums, passages (C1.1).

The one reader of the on-disk format of :mod:`~jaxparadigm.retrieval.index_store`; ``search
--index``, ``serve``, :class:`~jaxparadigm.retrieval.index_searcher.IndexSearcher` and
:meth:`SemanticIndex.load <jaxparadigm.retrieval.memory_index.SemanticIndex.load>` all open a
folder through it. Opening checks the untrusted folder before any row is used:

* the manifest against its schema (:func:`~jaxparadigm.retrieval.index_store.read_manifest`);
* an ``index add`` that is running or was interrupted: its committed state (``pending.base``) is
  opened, with a warning; an interrupted ``index build`` has none and is refused;
* every shard's embeddings file against its sha256 (``verify=True``), its dtype and shape
  ``float32 [rows, dim]``, and every row a finite unit vector (``|norm - 1| <= UNIT_NORM_TOL``,
  else ``q . d`` would not be the cosine, C1.2), memory-mapped read-only.

A shard's passages are read (checksum and every line checked) the first time one of its rows is
asked for. Row ``r`` lives in shard ``r // shard_rows`` at row ``r % shard_rows``.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import numpy as np

from jaxparadigm.errors import InputError
from jaxparadigm.retrieval.index_store import (
    committed,
    read_manifest,
    shard_embeddings,
    shard_passages,
)
from jaxparadigm.retrieval.passages import Passage

__all__ = ["Index"]


class Index:
    """An index folder opened for reading, checked (module docstring) (C1.1).

    ``manifest`` (the committed one), ``model`` (``{name, dim, max_seq_length}``), ``dim``,
    ``len(index)`` rows, ``shard_arrays`` (read-only float32 ``[rows, dim]`` per shard),
    ``embeddings()`` (all rows, one float32 copy), ``passage(row)`` and ``passages()``.
    """

    def __init__(self, path: str | os.PathLike, *, verify: bool = True) -> None:
        self.path = Path(path)
        m = read_manifest(self.path)
        if m["pending"] and "base" in m["pending"]:
            warnings.warn(
                f"{self.path}: an `index add` is running or was interrupted; searching the "
                f"{m['pending']['base']['count']} passages indexed before it",
                stacklevel=3,
            )
            m = committed(m)
        if m["status"] != "complete":
            raise InputError(
                f"{self.path}: the build was interrupted ({m['count']} of "
                f"{m['pending']['start_row'] + m['pending']['rows']} passages written); rerun the "
                "same `jaxparadigm index build`/`add` command to resume it"
            )
        self.manifest = m
        self.model: dict = m["model"]
        self.dim: int = m["model"]["dim"]
        self._verify = verify
        self._shards: list[dict] = m["shards"]
        self.shard_arrays: list[np.ndarray] = [
            shard_embeddings(self.path, s, self.dim, verify=verify) for s in self._shards
        ]
        self._passages: dict[int, list[Passage]] = {}

    def __len__(self) -> int:
        return sum(a.shape[0] for a in self.shard_arrays)

    def embeddings(self) -> np.ndarray:
        """Every row, float32 ``[len(self), dim]`` (a copy; ``(0, dim)`` for an empty index)."""
        if not self.shard_arrays:
            return np.zeros((0, self.dim), np.float32)
        return np.concatenate([np.asarray(a, np.float32) for a in self.shard_arrays])

    def passage(self, row: int) -> Passage:
        """The passage stored at corpus ``row`` (its shard's passages are read once, checked)."""
        size = self.manifest["shard_rows"]
        j = row // size
        if j not in self._passages:
            self._passages[j] = shard_passages(self.path, self._shards[j], verify=self._verify)
        return self._passages[j][row % size]

    def passages(self) -> list[Passage]:
        """Every passage, in row order."""
        size = self.manifest["shard_rows"]
        return [
            self.passage(j * size + i) for j, s in enumerate(self._shards) for i in range(s["rows"])
        ]
