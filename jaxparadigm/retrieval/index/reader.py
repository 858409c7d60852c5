"""``Index``: one index folder opened for reading -- manifest, shards, checksums, passages (C1.1).

The one reader of the on-disk format of :mod:`~jaxparadigm.retrieval.index.store`; ``search
--index``, ``serve``, :class:`~jaxparadigm.retrieval.index.searcher.IndexSearcher` and
:meth:`SemanticIndex.load <jaxparadigm.retrieval.index.memory_index.SemanticIndex.load>` all open a
folder through it. Opening checks the untrusted folder before any row is used:

* the manifest against its schema (:func:`~jaxparadigm.retrieval.index.store.read_manifest`);
* an ``index add`` that is running or was interrupted: its committed state (``pending.base``) is
  opened, with a warning; an interrupted ``index build`` has none and is refused;
* every shard's embeddings file against its sha256 (``verify=True``), its dtype and shape
  ``float32 [rows, dim]``, and every row a finite unit vector (``|norm - 1| <= UNIT_NORM_TOL``,
  else ``q . d`` would not be the cosine, C1.2), memory-mapped read-only;
* the inverted lists, when the manifest names them (``ivf``): every file against its
  sha256, its shape, the offsets and the ids
  (:func:`~jaxparadigm.retrieval.index.ivf_store.open_ivf`), memory-mapped as ``ivf``.

A shard's passages are read (checksum and every line checked) the first time one of its rows is
asked for. Row ``r`` lives in shard ``r // shard_rows`` at row ``r % shard_rows``.

**Consistent with the writer's commit protocol.** A writer commits by replacing the
manifest, then deletes the shard files the new manifest no longer names. Opening therefore reads
the manifest and maps every ``.jsonl`` and ``.npy`` it names (read-only maps hold no file
descriptor): from then on the maps keep those bytes readable whatever the writer deletes, so the
``Index`` is one snapshot.
If a named file is missing or fails while opening, the manifest is read again: a newer one (a
writer committed meanwhile) is opened instead, at most :data:`OPEN_ATTEMPTS` times; an unchanged
one means the folder is damaged, and that error is raised.
"""

from __future__ import annotations

import mmap
import os
import warnings
from pathlib import Path

import numpy as np

from jaxparadigm.errors import InputError
from jaxparadigm.retrieval.documents.passages import Passage
from jaxparadigm.retrieval.index.ivf_store import IVFLists, open_ivf
from jaxparadigm.retrieval.index.store import (
    committed,
    open_passages,
    read_manifest,
    shard_embeddings,
    shard_passages,
    shard_records,
    verify_shards,
)

__all__ = ["Index", "OPEN_ATTEMPTS", "check_parts", "shard_range"]

#: How many manifests an open tries: a shard that vanished because a newer manifest was
#: committed meanwhile sends it back to that manifest; an unchanged manifest fails at once.
OPEN_ATTEMPTS = 10


def shard_range(shards: int, part: int, parts: int) -> range:
    """The shards process ``part`` of ``parts`` holds: ``[floor(part S / parts), floor((part + 1)
    S / parts))`` of the ``S`` shards, contiguous (so its rows are one run) and balanced to one
    shard."""
    return range(part * shards // parts, (part + 1) * shards // parts)


def check_parts(path: str | os.PathLike, parts: int) -> None:
    """Check, in this one process, every part of the index at ``path`` that ``parts`` processes
    would hold, as each process checks its own (C1.1): each part opened (``Index(path, part=(p,
    parts))``: at least one shard per process, embeddings' checksum, shape and unit rows) and
    every passages file's checksum and lines read. The launcher of a group calls it before any
    process starts, so a damaged file or too few shards is one :class:`InputError` naming it in
    the command's own output -- never a collective that times out waiting for a process that
    failed. Warnings (an interrupted ``index add``) are left to the group's processes."""
    for part in range(parts):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            index = Index(path, part=(part, parts))
        try:
            for j in index.held:
                shard_passages(index.path, index._shards[j], opened=index._files[j])
        finally:
            index.close()


def _close(maps: list[mmap.mmap | bytes]) -> None:
    for m in maps:  # no module global here: __del__ may run at interpreter exit
        close = getattr(m, "close", None)  # an mmap; b"" (an empty file) has none
        if close is not None:
            close()


class Index:
    """An index folder opened for reading, checked (module docstring) (C1.1).

    ``manifest`` (the committed one), ``model`` (``{name, dim, max_seq_length}``), ``dim``,
    ``len(index)`` rows, ``shard_arrays`` (read-only float32 ``[rows, dim]`` per shard),
    ``embeddings()`` (all rows, one float32 copy), ``passage(row)``, ``context(row)`` and
    ``passages()``.

    ``part=(p, n)``: open only the shards process ``p`` of ``n`` holds (:func:`shard_range`;
    ``held``, ``first_row``), for a search split over processes: only their files are
    read and checked, ``len`` and ``embeddings()`` count only them, and a row of another shard is
    refused; the IVF lists (over every row) are not opened.
    """

    def __init__(
        self, path: str | os.PathLike, *, verify: bool = True, part: tuple[int, int] | None = None
    ) -> None:
        self.path = Path(path)
        self._verify = verify
        self._part = part
        m = read_manifest(self.path)
        for attempt in range(OPEN_ATTEMPTS):
            try:
                self._open(committed(m) if m["pending"] and "base" in m["pending"] else m)
                break
            except InputError:
                newer = read_manifest(self.path)
                if newer == m or attempt == OPEN_ATTEMPTS - 1:
                    raise  # the files an unchanged manifest names are damaged or missing
                m = newer  # a writer committed a newer manifest and deleted what it replaced
        if m["pending"] and "base" in m["pending"]:
            warnings.warn(
                f"{self.path}: an `index add` is running or was interrupted; searching the "
                f"{m['pending']['base']['count']} passages indexed before it",
                stacklevel=3,
            )

    def _open(self, m: dict) -> None:
        """Open the state ``m`` names: each shard's passages file, then its embeddings, mapped
        (both stay readable if a writer deletes their names later)."""
        if m["status"] != "complete":
            raise InputError(
                f"{self.path}: the build was interrupted ({m['count']} of "
                f"{m['pending']['start_row'] + m['pending']['rows']} passages written); rerun the "
                "same `jaxparadigm index build`/`add` command to resume it"
            )
        dim = m["model"]["dim"]
        held = self._held(m)
        files: list[mmap.mmap | bytes] = []
        try:
            for s in held:
                files.append(open_passages(self.path, m["shards"][s]))
            arrays = [
                shard_embeddings(self.path, m["shards"][s], dim, verify=self._verify) for s in held
            ]
            ivf = (
                open_ivf(self.path, m["ivf"], dim, m["count"], verify=self._verify)
                if m.get("ivf") and self._part is None
                else None
            )
        except BaseException:
            _close(files)
            raise
        self.manifest = m
        self.model: dict = m["model"]
        self.dim: int = dim
        self._shards: list[dict] = m["shards"]
        self._files = dict(zip(held, files, strict=True))
        #: The shards this Index holds (all of them unless opened with ``part``).
        self.held: range = held
        #: The corpus row of the first held row (0 unless opened with ``part``).
        self.first_row: int = held.start * m["shard_rows"]
        self.shard_arrays: list[np.ndarray] = arrays
        self._passages: dict[int, list[Passage]] = {}
        self._contexts: dict[int, list[str]] = {}
        self.ivf: IVFLists | None = ivf

    def _held(self, m: dict) -> range:
        if self._part is None:
            return range(len(m["shards"]))
        part, parts = self._part
        if len(m["shards"]) < parts:
            raise InputError(
                f"{self.path}: {len(m['shards'])} shard(s) of <= {m['shard_rows']} rows, expected "
                f"at least one per process ({parts}); use fewer processes or rebuild with a "
                "smaller --shard-rows"
            )
        return shard_range(len(m["shards"]), part, parts)

    def verify_passages(self) -> None:
        """Check every held shard's passages file against its sha256 now (:meth:`passage` reads
        and checks a shard's the first time one of its rows is asked for): a process of a group
        checks its part whole before the group's first step."""
        shards = [self._shards[j] for j in self.held]
        list(verify_shards(self.path, {"shards": shards}, kinds=("passages",)))

    def close(self) -> None:
        """Unmap the passages not read yet (the mapped embeddings stay usable)."""
        _close(list(getattr(self, "_files", {}).values()))

    def __del__(self) -> None:
        self.close()

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
        if j not in self.held and self._part is None:
            raise InputError(f"row: got {row}, expected 0 <= row < {len(self)}")
        if j not in self.held:
            raise InputError(
                f"row: got {row}, held by another process (this one holds shards "
                f"{self.held.start}-{self.held.stop - 1}, rows {self.first_row}-"
                f"{self.first_row + len(self) - 1})"
            )
        if j not in self._passages:
            self._passages[j], self._contexts[j] = shard_records(
                self.path, self._shards[j], verify=self._verify, opened=self._files[j]
            )
            _close([self._files[j]])  # read once: the passages are held from here on
        return self._passages[j][row % size]

    def context(self, row: int) -> str:
        """The context stored with corpus ``row``'s passage (file name and section titles,
        :mod:`~jaxparadigm.retrieval.documents.outline`); ``""`` for an index built without
        contexts."""
        self.passage(row)  # checks the row, reads its shard once
        size = self.manifest["shard_rows"]
        return self._contexts[row // size][row % size]

    def passages(self) -> list[Passage]:
        """Every passage held, in row order."""
        size = self.manifest["shard_rows"]
        return [
            self.passage(j * size + i) for j in self.held for i in range(self._shards[j]["rows"])
        ]
