"""An in-memory index's rows saved as, and read back from, an index folder (C1.1, C1.2).

The package has one on-disk index format: the manifest + checksummed shards of
:mod:`~jaxparadigm.retrieval.index_store` that ``jaxparadigm index build`` writes and
``search --index`` / ``serve`` read. :class:`~jaxparadigm.retrieval.semantic_index.SemanticIndex`
saves into it too: each of its documents is one passage (source ``docs[i]``, characters
``[0, len(text))``), and the manifest records ``chunk_tokens = max_seq_length - 2`` (the model
reads at most that many word pieces of a document) with ``overlap = 0``. The saved folder is
therefore also an index for :class:`~jaxparadigm.retrieval.index_search.IndexSearcher`.

Writing takes the folder's lock, writes the shards under fresh names, then replaces the manifest
atomically and deletes the shards it no longer names: a crash at any point leaves the previous
index (or none) readable, with no temporary file left behind. Reading verifies every shard's sha256
and that every row is a finite unit vector, so a damaged (truncated, bit-flipped) file is refused
with :class:`~jaxparadigm.errors.InputError` naming it, never searched.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from jaxparadigm.errors import InputError, require_int
from jaxparadigm.retrieval.index_store import (
    LOCK,
    MANIFEST,
    index_lock,
    new_manifest,
    read_manifest,
    remove_unreferenced,
    shard_embeddings,
    shard_passages,
    write_manifest,
    write_shard,
)
from jaxparadigm.retrieval.passages import Passage

__all__ = ["write_snapshot", "read_snapshot"]


def _target(index_dir: Path) -> None:
    """Refuse a path that is a file, or a non-empty folder that holds no index (never clobbered)."""
    if index_dir.exists() and not index_dir.is_dir():
        raise InputError(f"{index_dir}: a file, expected a folder to save the index into")
    if index_dir.is_dir() and not (index_dir / MANIFEST).is_file():
        others = sorted(p.name for p in index_dir.iterdir() if p.name != LOCK)
        if others:
            raise InputError(
                f"{index_dir}: holds {others[:3]} but no {MANIFEST}; expected a new, empty or "
                "index folder (an index is never written over other files)"
            )


def write_snapshot(
    index_dir: str | os.PathLike,
    model: dict,
    embeddings: np.ndarray,
    texts: Sequence[str],
    batch_size: int,
    shard_rows: int = 4096,
) -> Path:
    """Save unit ``embeddings [n, dim]`` and their ``texts`` as a complete index; returns the folder.

    ``model`` is the manifest's ``{name, dim, max_seq_length}``; an index already in the folder is
    replaced (module docstring: atomically, old shards deleted afterwards).
    """
    index_dir = Path(index_dir)
    require_int("shard_rows", shard_rows, 1)
    _target(index_dir)
    index_dir.mkdir(parents=True, exist_ok=True)
    build = {"chunk_tokens": model["max_seq_length"] - 2, "overlap": 0, "batch_size": batch_size}
    m = new_manifest(model, shard_rows, build)
    m["status"], m["pending"] = "complete", None
    passages = [Passage(f"docs[{i}]", 0, len(t), t) for i, t in enumerate(texts)]
    m["sources"] = [{"source": p.source, "passages": 1} for p in passages]
    with index_lock(index_dir, "SemanticIndex.save"):
        _target(index_dir)  # again, under the lock
        try:
            for number, lo in enumerate(range(0, len(passages), shard_rows)):
                rows = slice(lo, lo + shard_rows)
                m["shards"].append(write_shard(index_dir, number, embeddings[rows], passages[rows]))
            m["count"] = len(passages)
            write_manifest(index_dir, m)
        except BaseException:
            _keep_previous(index_dir)
            raise
        remove_unreferenced(index_dir, m)
    return index_dir


def _keep_previous(index_dir: Path) -> None:
    """After a failed write: delete the new shard files, keep the previous index's (if readable)."""
    try:
        previous = read_manifest(index_dir)
    except InputError:
        previous = {"shards": []}
    remove_unreferenced(index_dir, previous)


def read_snapshot(index_dir: str | os.PathLike, dim: int) -> tuple[np.ndarray, list[str]]:
    """``(embeddings [n, dim] float32, texts)`` of the complete index in ``index_dir``, verified.

    ``FileNotFoundError`` when there is no such folder; :class:`InputError` naming the folder (and
    the file) when it is a file, holds no or a damaged manifest, an interrupted build, embeddings of
    another dimension than ``dim``, a shard failing its checksum or a row that is not a finite unit
    vector (then ``q . d`` would not be the cosine, C1.2).
    """
    index_dir = Path(index_dir)
    if not index_dir.exists():
        raise FileNotFoundError(f"{index_dir}: no such folder; expected a saved index")
    if not index_dir.is_dir():
        raise InputError(f"{index_dir}: a file, not a saved index (a folder with {MANIFEST})")
    m = read_manifest(index_dir)
    if m["status"] != "complete":
        raise InputError(f"{index_dir}: holds an interrupted build; expected a complete index")
    if m["model"]["dim"] != dim:
        raise InputError(
            f"{index_dir}: embeddings have dimension {m['model']['dim']}, expected {dim} "
            "(the encoder's)"
        )
    embs = [np.array(shard_embeddings(index_dir, s, dim), np.float32) for s in m["shards"]]
    texts = [p.text for s in m["shards"] for p in shard_passages(index_dir, s)]
    return (np.concatenate(embs) if embs else np.zeros((0, dim), np.float32)), texts
