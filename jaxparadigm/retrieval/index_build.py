"""Build, extend and resume a persistent index directory from a user's files (C1.1).

    build_index(paths, out_dir, encoder)   read -> split into passages -> encode shard by shard
    add_to_index(index_dir, paths, encoder)  the same for new files, appended after the last row

Both write one shard at a time (:mod:`~jaxparadigm.retrieval.index_store`) and replace the
manifest after each, with ``status: building`` and a ``pending`` plan: the sha256 of the passages
still to be written and the row they start at. Run again with the same inputs after an interrupt
and the shards already in the manifest are kept (checksums verified), only the remaining passages
are encoded. A last shard holding fewer than ``shard_rows`` rows is completed by rewriting it
under a new name (its stored embeddings are reused, not re-encoded).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from jaxparadigm.errors import InputError
from jaxparadigm.retrieval.index_store import (
    MANIFEST,
    new_manifest,
    read_manifest,
    remove_unreferenced,
    shard_embeddings,
    shard_passages,
    verify_shards,
    write_manifest,
    write_shard,
)
from jaxparadigm.retrieval.passages import (
    Passage,
    read_documents,
    split_passages,
    splitting_tokenizer,
)

__all__ = ["build_index", "add_to_index", "DEFAULT_MODEL_NAME"]

DEFAULT_MODEL_NAME = "all-MiniLM-L6-v2"
ENCODE_CHUNK = 256  # passages per encode call: the progress bar's step


def _model_entry(encoder, model_name: str) -> dict:
    for attr in ("encode", "dim", "max_seq_length", "tokenizer"):
        if not hasattr(encoder, attr):
            raise TypeError(
                f"encoder: got {type(encoder).__name__} without {attr!r}, expected a "
                "SentenceEncoder (load_minilm())"
            )
    return {"name": model_name, "dim": encoder.dim, "max_seq_length": encoder.max_seq_length}


def _plan_sha256(model: dict, build: dict, start_row: int, passages: list[Passage]) -> str:
    h = hashlib.sha256(json.dumps([model, build, start_row], sort_keys=True).encode())
    for p in passages:
        h.update(json.dumps(p, ensure_ascii=False).encode("utf-8"))
    return h.hexdigest()


def _passages(paths, encoder, chunk_tokens: int, overlap: int) -> tuple[list[Passage], list]:
    docs = read_documents(paths)
    passages = split_passages(docs, splitting_tokenizer(encoder.tokenizer), chunk_tokens, overlap)
    if not passages:
        raise InputError(f"paths {list(map(str, paths))}: the documents hold no text to index")
    counts: dict[str, int] = {}
    for p in passages:
        counts[p.source] = counts.get(p.source, 0) + 1
    return passages, [{"source": s, "passages": n} for s, n in counts.items()]


def _encode(encoder, texts: list[str], batch_size: int, bar) -> np.ndarray:
    parts = []
    for i in range(0, len(texts), ENCODE_CHUNK):
        chunk = texts[i : i + ENCODE_CHUNK]
        parts.append(np.asarray(encoder.encode(chunk, batch_size=batch_size, normalize=True)))
        if bar is not None:
            bar.update(len(chunk))
    return np.concatenate(parts).astype(np.float32, copy=False)


def _write_pending(
    index_dir: Path, m: dict, passages: list[Passage], encoder, batch_size: int, progress: bool
) -> dict:
    """Encode and write the passages the manifest's ``pending`` plan has not written yet."""
    start = m["pending"]["start_row"]
    todo = passages[m["count"] - start :]
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(passages), initial=len(passages) - len(todo), unit="passage")
    try:
        while todo:
            size, last = m["shard_rows"], m["shards"][-1] if m["shards"] else None
            partial = last is not None and last["rows"] < size
            room = size - last["rows"] if partial else size
            take, todo = todo[:room], todo[room:]
            emb = _encode(encoder, [p.text for p in take], batch_size, bar)
            if partial:
                old_emb = shard_embeddings(index_dir, last, m["model"]["dim"])
                old = shard_passages(index_dir, last)
                entry = write_shard(
                    index_dir, len(m["shards"]) - 1, np.concatenate([old_emb, emb]), old + take
                )
                m["shards"][-1] = entry
            else:
                m["shards"].append(write_shard(index_dir, len(m["shards"]), emb, take))
            m["count"] += len(take)
            write_manifest(index_dir, m)  # from here on this shard is never re-encoded
    finally:
        if bar is not None:
            bar.close()
    m["status"], m["pending"] = "complete", None
    write_manifest(index_dir, m)
    remove_unreferenced(index_dir, m)
    return m


def _resume_or_refuse(index_dir: Path, m: dict, plan: str, verb: str) -> None:
    if m["status"] == "building" and m["pending"] and m["pending"]["plan_sha256"] == plan:
        list(verify_shards(index_dir, m))  # the finished shards must be intact to build on
        return
    raise InputError(
        f"{index_dir}: holds an interrupted build or add of different inputs (status "
        f"{m['status']!r}); rerun that command with the same files to resume, or {verb}"
    )


def build_index(
    paths: Sequence[str | os.PathLike],
    out_dir: str | os.PathLike,
    encoder,
    *,
    chunk_tokens: int | None = None,
    overlap: int = 32,
    shard_rows: int = 4096,
    batch_size: int = 32,
    model_name: str = DEFAULT_MODEL_NAME,
    progress: bool = False,
) -> dict:
    """Index the documents under ``paths`` into ``out_dir``; returns the manifest (C1.1).

    ``chunk_tokens`` defaults to ``encoder.max_seq_length - 2`` (the window plus [CLS]/[SEP] fits
    the model; a longer window would be cut silently, so it is refused). A directory holding an
    interrupted build of the same inputs is resumed; any other non-empty directory is refused.
    """
    out_dir = Path(out_dir)
    model = _model_entry(encoder, model_name)
    limit = encoder.max_seq_length - 2
    chunk_tokens = limit if chunk_tokens is None else chunk_tokens
    if (
        isinstance(chunk_tokens, int)
        and not isinstance(chunk_tokens, bool)
        and chunk_tokens > limit
    ):
        raise InputError(
            f"chunk_tokens: got {chunk_tokens}, expected <= {limit} (max_seq_length "
            f"{encoder.max_seq_length} minus [CLS] and [SEP]; longer windows would be truncated)"
        )
    build = {"chunk_tokens": chunk_tokens, "overlap": overlap, "batch_size": batch_size}
    passages, sources = _passages(paths, encoder, chunk_tokens, overlap)
    plan = _plan_sha256(model, build, 0, passages)
    if (out_dir / MANIFEST).is_file():
        m = read_manifest(out_dir)
        if m["status"] == "complete":
            raise InputError(
                f"{out_dir}: already holds a complete index of {m['count']} passages; use "
                "`jaxparadigm index add` to append files, or choose a new --out"
            )
        _resume_or_refuse(out_dir, m, plan, "delete the folder / choose a new --out")
    else:
        if out_dir.exists() and (not out_dir.is_dir() or any(out_dir.iterdir())):
            raise InputError(f"{out_dir}: exists and is not an empty folder; choose a new --out")
        out_dir.mkdir(parents=True, exist_ok=True)
        m = new_manifest(model, shard_rows, build)
        m["sources"] = sources
        m["pending"] = {"plan_sha256": plan, "start_row": 0, "rows": len(passages)}
        write_manifest(out_dir, m)
    return _write_pending(out_dir, m, passages, encoder, batch_size, progress)


def add_to_index(
    index_dir: str | os.PathLike,
    paths: Sequence[str | os.PathLike],
    encoder,
    *,
    batch_size: int = 32,
    model_name: str = DEFAULT_MODEL_NAME,
    progress: bool = False,
) -> dict:
    """Append the documents under ``paths`` to an existing index; returns the manifest (C1.1).

    Passages are cut with the index's own ``chunk_tokens``/``overlap``; the encoder must match the
    manifest's model; a source already in the index is refused (no duplicate rows).
    """
    index_dir = Path(index_dir)
    m = read_manifest(index_dir)
    model = _model_entry(encoder, model_name)
    if m["model"] != model:
        raise InputError(f"{index_dir}: index was built with {m['model']}, encoder is {model}")
    build = m["build"]
    passages, sources = _passages(paths, encoder, build["chunk_tokens"], build["overlap"])
    if m["status"] == "building":
        start = m["pending"]["start_row"] if m["pending"] else -1
        _resume_or_refuse(index_dir, m, _plan_sha256(model, build, start, passages), "rebuild")
        return _write_pending(index_dir, m, passages, encoder, batch_size, progress)
    have = {s["source"] for s in m["sources"]}
    dup = sorted(s["source"] for s in sources if s["source"] in have)
    if dup:
        raise InputError(f"{index_dir}: already indexes {dup[:5]}; expected new files to add")
    list(verify_shards(index_dir, m))
    m["sources"] += sources
    m["status"] = "building"
    plan = _plan_sha256(model, build, m["count"], passages)
    m["pending"] = {"plan_sha256": plan, "start_row": m["count"], "rows": len(passages)}
    write_manifest(index_dir, m)
    return _write_pending(index_dir, m, passages, encoder, batch_size, progress)
