"""Build, extend and resume a persistent index directory from a user's files (C1.1).

    build_index(paths, out_dir, encoder)   read -> split into passages -> encode shard by shard
    add_to_index(index_dir, paths, encoder)  the same for new files, appended after the last row

Arguments are checked before anything is written. Files are read by
:func:`~jaxparadigm.retrieval.documents.reading.read_documents` (real paths, bytes-exact offsets;
what cannot be used is skipped and listed in the manifest's ``skipped``, or refused with
``strict=True``). A build or add holds the index's lock file
(:func:`~jaxparadigm.retrieval.index.store.index_lock`): a second writer is refused at once.

Both write one shard at a time (:func:`~jaxparadigm.retrieval.index.writer.write_rows`, the one
writer) and replace the manifest after each, with ``status: building`` and a ``pending`` plan: the
sha256 of the passages still to be written and the row they start at. Run again with the same inputs
after an interrupt and the shards already in the manifest are kept (checksums verified), only the
remaining passages are encoded. A last shard holding fewer than ``shard_rows`` rows is completed by
rewriting it under a new name (its stored embeddings are reused, not re-encoded).

An add also records its starting point (``pending.base``: count, shards, sources, files), so an
interrupted add never locks the index: search serves the base (with a warning), an add of other
inputs first rolls the interrupted one back (its new shards are deleted), and the same add resumes.
"""

from __future__ import annotations

import copy
import os
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from jaxparadigm.common.progress import Progress
from jaxparadigm.common.quoting import plural
from jaxparadigm.errors import InputError, require_int
from jaxparadigm.retrieval.documents.passages import Passage, split_passages, splitting_tokenizer
from jaxparadigm.retrieval.documents.reading import (
    Reading,
    Skipped,
    collect_files,
    describe_skipped,
    read_documents,
    shown_name,
)
from jaxparadigm.retrieval.index.build_settings import (
    build_settings,
    passage_contexts_for,
    plan_sha256,
)
from jaxparadigm.retrieval.index.owned_files import holds_index
from jaxparadigm.retrieval.index.store import (
    LOCK,
    MANIFEST,
    committed,
    index_lock,
    new_manifest,
    read_manifest,
    remove_unreferenced,
    verify_shards,
    write_manifest,
)
from jaxparadigm.retrieval.index.writer import write_rows

__all__ = ["build_index", "add_to_index", "DEFAULT_MODEL_NAME", "NothingToAdd"]

DEFAULT_MODEL_NAME = "all-MiniLM-L6-v2"
ENCODE_CHUNK = 256  # passages per encode call: the progress bar's step


class PassageEncoder(Protocol):
    """What building reads of an encoder (a :class:`SentenceEncoder` is one): ``dim``,
    ``max_seq_length``, the word-piece ``tokenizer`` and ``encode(texts, batch_size=,
    normalize=) -> float32 [n, dim]`` (C1.1)."""

    @property
    def dim(self) -> int: ...
    @property
    def max_seq_length(self) -> int: ...
    @property
    def tokenizer(self) -> Any: ...
    def encode(
        self, sentences: list[str], batch_size: int = ..., normalize: bool = ...
    ) -> np.ndarray: ...


class NothingToAdd(InputError):
    """:func:`add_to_index` of files the index already holds: every document under the paths
    was skipped as "already indexed" (same path, same bytes) or "duplicate content" (the bytes
    of an indexed file), so the index is left untouched. ``held``: those files' skip entries,
    named in the message (``nothing to add: docs/a.txt is already indexed (unchanged)``)."""

    def __init__(self, held: list[Skipped], others: list[Skipped]):
        shown = [f"{s.path} is already indexed ({s.detail})" for s in held[:5]]
        more = [f"and {len(held) - 5} more"] if len(held) > 5 else []
        super().__init__(
            "\n".join(["nothing to add: " + "; ".join(shown + more), *describe_skipped(others)])
        )
        self.held = held


_HELD = ("already indexed", "duplicate content")


def _refuse_nothing_new(reading: Reading) -> None:
    if not reading.documents and any(s.reason in _HELD for s in reading.skipped):
        raise NothingToAdd(
            [s for s in reading.skipped if s.reason in _HELD],
            [s for s in reading.skipped if s.reason not in _HELD],
        )


def _model_entry(encoder, model_name: str) -> dict:
    for attr in ("encode", "dim", "max_seq_length", "tokenizer"):
        if not hasattr(encoder, attr):
            raise TypeError(
                f"encoder: got {type(encoder).__name__} without {attr!r}, expected a "
                "SentenceEncoder (load_minilm())"
            )
    return {"name": model_name, "dim": encoder.dim, "max_seq_length": encoder.max_seq_length}


def _passages(paths, reading: Reading, encoder, build: dict) -> tuple[list[Passage], list, list]:
    """The passages of ``reading``'s documents cut by ``build``, the manifest's ``sources`` and
    each passage's context (``""`` each when the build stores none)."""
    tokenizer = splitting_tokenizer(encoder.tokenizer)
    cut = (build["chunk_tokens"], build["overlap"])
    passages = split_passages(reading.documents, tokenizer, *cut)
    if not passages:
        raise InputError(
            "\n".join(
                [
                    f"paths {list(map(str, paths))}: the documents hold no text to index",
                    *describe_skipped(reading.skipped),
                ]
            )
        )
    counts: dict[str, int] = {}
    for p in passages:
        counts[p.source] = counts.get(p.source, 0) + 1
    sources = [{"source": s, "passages": n} for s, n in counts.items()]
    return passages, sources, passage_contexts_for(reading, passages, build)


def _record(reading: Reading) -> tuple[list[dict], list[dict]]:
    """The manifest's ``files`` and ``skipped`` entries for what was read."""
    return [f._asdict() for f in reading.files], [s._asdict() for s in reading.skipped]


def _history_entry(
    command: str, paths: Sequence[str | os.PathLike], reading: Reading, sources: list[dict]
) -> dict:
    """The manifest's ``history`` record of one build or add: when, the paths it was given, the
    passages and sources it added and every input it skipped (``index info`` shows them all)."""
    return {
        "command": command,
        "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "paths": [shown_name(p) for p in paths],
        "passages": sum(s["passages"] for s in sources),
        "sources": len(sources),
        "skipped": [s._asdict() for s in reading.skipped],
    }


def _check_out_dir(out_dir: Path) -> None:
    """Refuse an ``--out`` that is a file or lies below one, before anything is written."""
    if out_dir.exists() and not out_dir.is_dir():
        raise InputError(f"--out {out_dir}: exists and is not a folder; choose a new --out")
    for parent in out_dir.absolute().parents:
        if parent.exists():
            if not parent.is_dir():
                raise InputError(
                    f"--out {out_dir}: {parent} is a file, not a folder; choose a new --out"
                )
            break
    if out_dir.is_dir() and not (out_dir / MANIFEST).is_file():
        if any(p.name != LOCK for p in out_dir.iterdir()):
            raise InputError(f"{out_dir}: exists and is not an empty folder; choose a new --out")


def _encode(encoder, texts: list[str], batch_size: int, bar: Progress) -> np.ndarray:
    parts = []
    for i in range(0, len(texts), ENCODE_CHUNK):
        chunk = texts[i : i + ENCODE_CHUNK]
        parts.append(np.asarray(encoder.encode(chunk, batch_size=batch_size, normalize=True)))
        bar.update(len(chunk))
    return np.concatenate(parts).astype(np.float32, copy=False)


def _write_pending(
    index_dir: Path,
    m: dict,
    passages: list[Passage],
    contexts: list[str],
    encoder,
    batch_size: int,
    progress: bool,
) -> dict:
    """Encode and write (:func:`~jaxparadigm.retrieval.index.writer.write_rows`) the passages the
    manifest's ``pending`` plan has not written yet (each encoded from its text alone, stored
    with its context), with progress when ``progress`` (a bar on a terminal, plain lines
    otherwise: :class:`~jaxparadigm.common.progress.Progress`)."""
    done = m["count"] - m["pending"]["start_row"]
    desc = "index add" if "base" in m["pending"] else "index build"
    bar = Progress(
        len(passages), desc, initial=done, unit="passage", enabled=progress, compiles=True
    )

    def embed(row: int, take: list[Passage]) -> np.ndarray:
        del row  # encoded from their text
        return _encode(encoder, [p.text for p in take], batch_size, bar)

    try:
        return write_rows(index_dir, m, passages, embed, contexts=contexts)
    finally:
        bar.close()


def _resume_or_refuse(index_dir: Path, m: dict, plan: str, verb: str) -> None:
    if m["status"] == "building" and m["pending"]["plan_sha256"] == plan:
        list(verify_shards(index_dir, m))  # the finished shards must be intact to build on
        return
    raise InputError(
        f"{index_dir}: holds an interrupted build of different inputs (status "
        f"{m['status']!r}); rerun that command with the same files to resume, or {verb}"
    )


def _roll_back(index_dir: Path, m: dict) -> dict:
    """Return the index to ``pending.base`` (an interrupted add's start) and delete its shards."""
    rows = m["pending"]["rows"]
    m = committed(m)
    write_manifest(index_dir, m)
    remove_unreferenced(index_dir, m)
    warnings.warn(
        f"{index_dir}: rolled back an interrupted `index add` of {plural(rows, 'passage')} "
        "(its inputs differ from this command's)",
        stacklevel=3,
    )
    return m


def build_index(
    paths: Sequence[str | os.PathLike],
    out_dir: str | os.PathLike,
    encoder: PassageEncoder,
    *,
    chunk_tokens: int | None = None,
    overlap: int = 32,
    shard_rows: int = 4096,
    batch_size: int = 32,
    model_name: str = DEFAULT_MODEL_NAME,
    progress: bool = False,
    strict: bool = False,
    context: bool = True,
) -> dict:
    """Index the documents under ``paths`` into ``out_dir``; returns the manifest (C1.1).

    ``chunk_tokens`` defaults to ``encoder.max_seq_length - 2`` (the window plus [CLS]/[SEP] fits
    the model; a longer window would be cut silently, so it is refused). A directory holding an
    interrupted build of the same inputs is resumed; any other non-empty directory is refused.
    ``context``: each passage's file name and section titles or class/def (``outline``) is
    stored beside it (``build.context``; ``index add`` follows) for the keyword ranking; the
    embedding stays the text's (:data:`~jaxparadigm.retrieval.index.build_settings.CONTEXT`).
    Every argument is checked before the folder is created or written.
    """
    out_dir = Path(out_dir)
    model = _model_entry(encoder, model_name)
    build, shard_rows = build_settings(
        encoder, chunk_tokens, overlap, shard_rows, batch_size, context
    )
    batch_size = build["batch_size"]
    _check_out_dir(out_dir)
    reading = read_documents(paths, strict=strict, skip_folder=holds_index)
    passages, sources, contexts = _passages(paths, reading, encoder, build)
    plan = plan_sha256(model, build, 0, passages, contexts)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"--out {out_dir}: cannot create the folder ({exc.strerror})") from None
    with index_lock(out_dir, "index build"):
        if (out_dir / MANIFEST).is_file():
            m = read_manifest(out_dir)
            if m["status"] == "complete" or "base" in m["pending"]:
                raise InputError(
                    f"{out_dir}: already holds an index of "
                    f"{plural(committed(m)['count'], 'passage')}; "
                    "use `jaxparadigm index add` to append files, or choose a new --out"
                )
            _resume_or_refuse(out_dir, m, plan, "delete the folder / choose a new --out")
        else:
            _check_out_dir(out_dir)  # again, under the lock
            m = new_manifest(model, shard_rows, build)
            m["sources"] = sources
            m["files"], m["skipped"] = _record(reading)
            m["history"] = [_history_entry("build", paths, reading, sources)]
            m["pending"] = {"plan_sha256": plan, "start_row": 0, "rows": len(passages)}
            write_manifest(out_dir, m)
        return _write_pending(out_dir, m, passages, contexts, encoder, batch_size, progress)


def _check_appendable(index_dir: Path, m: dict, model: dict) -> None:
    """Refuse ``index add`` on an index of another model or holding an interrupted build."""
    if m["model"] != model:
        raise InputError(f"{index_dir}: index was built with {m['model']}, encoder is {model}")
    if m["status"] == "building" and "base" not in m["pending"]:
        raise InputError(
            f"{index_dir}: holds an interrupted `index build` ({m['count']} of "
            f"{m['pending']['start_row'] + m['pending']['rows']} passages written); rerun that "
            "build command with the same files to resume it"
        )


def _refuse_changed(index_dir: Path, m: dict, reading: Reading) -> None:
    """Refuse files the index already holds under the same path with other bytes."""
    have = {f["path"] for f in m.get("files", [])}
    have |= {s["source"] for s in m["sources"]} | {
        s["source"].rpartition(":")[0] for s in m["sources"]
    }
    changed = sorted(f.path for f in reading.files if f.path in have)
    if changed:
        raise InputError(
            f"{index_dir}: already indexes {changed[:5]} with other contents; rebuild the "
            "index to update changed files"
        )


def add_to_index(
    index_dir: str | os.PathLike,
    paths: Sequence[str | os.PathLike],
    encoder: PassageEncoder,
    *,
    batch_size: int = 32,
    model_name: str = DEFAULT_MODEL_NAME,
    progress: bool = False,
    strict: bool = False,
) -> dict:
    """Append the documents under ``paths`` to an existing index; returns the manifest (C1.1).

    Passages are cut with the index's own ``chunk_tokens``/``overlap``; the encoder must match the
    manifest's model. A file already in the index with the same bytes is skipped ("already
    indexed"), one whose bytes changed since is refused (rebuild to update it); a file with the
    bytes of an indexed file at another path is skipped ("duplicate content"). When that leaves
    no document to read, :class:`NothingToAdd` names the files and nothing is written.
    """
    index_dir = Path(index_dir)
    batch_size = require_int("batch_size", batch_size, 1)
    model = _model_entry(encoder, model_name)
    read_manifest(index_dir)  # an index, before a lock file is created in the folder
    collect_files(paths, skip_folder=holds_index)  # missing paths: refused before the lock
    with index_lock(index_dir, "index add"):
        m = read_manifest(index_dir)
        _check_appendable(index_dir, m, model)
        base = committed(m)
        known = {f["sha256"]: f["path"] for f in base.get("files", [])}
        reading = read_documents(paths, strict=strict, known_sha256=known, skip_folder=holds_index)
        _refuse_nothing_new(reading)
        build = m["build"]
        passages, sources, contexts = _passages(paths, reading, encoder, build)
        if m["status"] == "building":
            plan = plan_sha256(model, build, m["pending"]["start_row"], passages, contexts)
            if plan == m["pending"]["plan_sha256"]:
                list(verify_shards(index_dir, m))
                return _write_pending(
                    index_dir, m, passages, contexts, encoder, batch_size, progress
                )
            m = _roll_back(index_dir, m)
        _refuse_changed(index_dir, m, reading)
        list(verify_shards(index_dir, m))
        m["pending"] = {
            "plan_sha256": plan_sha256(model, build, m["count"], passages, contexts),
            "start_row": m["count"],
            "rows": len(passages),
            "base": {
                k: copy.deepcopy(m.get(k, []))
                for k in ("count", "shards", "sources", "files", "history")
            },
        }
        files, m["skipped"] = _record(reading)
        m["history"] = [*m.get("history", []), _history_entry("add", paths, reading, sources)]
        m["sources"] += sources
        m["files"] = m.get("files", []) + files
        m["status"] = "building"
        write_manifest(index_dir, m)
        return _write_pending(index_dir, m, passages, contexts, encoder, batch_size, progress)
