"""The one writer of index folders: shards of rows, then the manifest (C1.1, C1.2).

:func:`write_rows` is the only function that writes shard files. It appends the passages a
manifest's ``pending`` plan has not written yet, one shard at a time, each under a fresh name
(:func:`~jaxparadigm.retrieval.index.store.write_shard`); a last shard holding fewer than
``shard_rows`` rows is completed by rewriting it under a new name (its stored embeddings are
reused). An index with inverted lists (``ivf``) gets its new rows assigned to their nearest lists
before the commit (:func:`~jaxparadigm.retrieval.index.ivf_build.extend_ivf`). With
``checkpoint=True`` (``index build``/``add``) the manifest is replaced after every shard, so an
interrupted build resumes from the last one; with ``checkpoint=False`` (a snapshot) only once, at
the end. Finally the manifest says ``complete`` and the files it no longer names are deleted.

:func:`write_snapshot` saves rows already embedded (a
:class:`~jaxparadigm.retrieval.index.memory_index.SemanticIndex`) as a complete index through it:
each document is one passage (source ``docs[i]``, characters ``[0, len(text))``), the manifest
records ``chunk_tokens = max_seq_length - 2`` (the model reads at most that many word pieces) with
``overlap = 0``. It takes the folder's lock and writes the manifest once, after every shard, so a
crash at any point leaves the previous index (or none) readable, with no temporary file left.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from jaxparadigm.errors import InputError, require_int
from jaxparadigm.retrieval.documents.passages import Passage
from jaxparadigm.retrieval.index.store import (
    LOCK,
    MANIFEST,
    index_lock,
    new_manifest,
    read_manifest,
    remove_unreferenced,
    shard_embeddings,
    shard_records,
    write_manifest,
    write_shard,
)

__all__ = ["write_rows", "write_snapshot"]

# (corpus row of the first passage, the passages) -> their float32 [len(passages), dim] embeddings
Embed = Callable[[int, list[Passage]], np.ndarray]


def write_rows(
    index_dir: Path,
    m: dict,
    passages: list[Passage],
    embed: Embed,
    *,
    checkpoint: bool = True,
    contexts: list[str] | None = None,
) -> dict:
    """Write the ``passages`` (all of ``m["pending"]``'s plan; ``contexts``: one per passage,
    stored beside it when not empty) from row ``m["count"]`` on; returns ``m``, complete (module
    docstring)."""
    start = m["pending"]["start_row"]
    contexts = [""] * len(passages) if contexts is None else contexts
    todo = passages[m["count"] - start :]
    todo_contexts = contexts[m["count"] - start :]
    while todo:
        size, last = m["shard_rows"], m["shards"][-1] if m["shards"] else None
        partial = last if last is not None and last["rows"] < size else None
        room = size - partial["rows"] if partial is not None else size
        take, todo = todo[:room], todo[room:]
        take_contexts, todo_contexts = todo_contexts[:room], todo_contexts[room:]
        emb = embed(m["count"], take)
        if partial is not None:
            old_emb = shard_embeddings(index_dir, partial, m["model"]["dim"])
            old, old_contexts = shard_records(index_dir, partial)
            entry = write_shard(
                index_dir,
                len(m["shards"]) - 1,
                np.concatenate([old_emb, emb]),
                old + take,
                old_contexts + take_contexts,
            )
            m["shards"][-1] = entry
        else:
            entry = write_shard(index_dir, len(m["shards"]), emb, take, take_contexts)
            m["shards"].append(entry)
        m["count"] += len(take)
        if checkpoint:
            write_manifest(index_dir, m)  # from here on this shard is never re-encoded
    if m.get("ivf") and m["ivf"]["rows"] != m["count"]:  # new rows join their nearest lists
        from jaxparadigm.retrieval.index.ivf_build import extend_ivf

        m["ivf"] = extend_ivf(index_dir, m)
    m["status"], m["pending"] = "complete", None
    write_manifest(index_dir, m)
    remove_unreferenced(index_dir, m)
    return m


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
    """Save unit ``embeddings [n, dim]`` and their ``texts`` as a complete index; return the folder.

    ``model`` is the manifest's ``{name, dim, max_seq_length}``; an index already in the folder is
    replaced (module docstring: atomically, old shards deleted afterwards).
    """
    index_dir = Path(index_dir)
    shard_rows = require_int("shard_rows", shard_rows, 1)
    _target(index_dir)
    index_dir.mkdir(parents=True, exist_ok=True)
    build = {"chunk_tokens": model["max_seq_length"] - 2, "overlap": 0, "batch_size": batch_size}
    m = new_manifest(model, shard_rows, build)
    passages = [Passage(f"docs[{i}]", 0, len(t), t) for i, t in enumerate(texts)]
    m["sources"] = [{"source": p.source, "passages": 1} for p in passages]
    m["pending"] = {"start_row": 0, "rows": len(passages)}  # in memory only: never written

    def rows(row: int, take: list[Passage]) -> np.ndarray:
        return embeddings[row : row + len(take)]

    with index_lock(index_dir, "SemanticIndex.save"):
        _target(index_dir)  # again, under the lock
        try:
            write_rows(index_dir, m, passages, rows, checkpoint=False)
        except BaseException:
            _keep_previous(index_dir)
            raise
    return index_dir


def _keep_previous(index_dir: Path) -> None:
    """After a failed write: delete the new shard files, keep the previous index's (if readable)."""
    try:
        previous = read_manifest(index_dir)
    except InputError:
        previous = {"shards": []}
    remove_unreferenced(index_dir, previous)
