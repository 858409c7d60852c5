"""The persistent index directory: a JSON manifest plus fixed-size, checksummed shards (C1.1).

    INDEX_DIR/manifest.json          format, model (name, dim, max_seq_length), dtype, shard_rows,
                                     count, status, build config, sources, shards (name, rows,
                                     sha256 of each file)
    INDEX_DIR/shard_00000-<h>.npy    float32 [rows, dim] unit embeddings (np.load(mmap_mode="r"))
    INDEX_DIR/shard_00000-<h>.jsonl  one passage per line: {"source", "start", "end", "text"}

Row ``r`` of the corpus is row ``r % shard_rows`` of shard ``r // shard_rows``: every shard holds
``shard_rows`` rows except the last. A shard's files are written under a fresh name (``<h>`` is the
start of the embeddings' sha256), then the manifest is replaced atomically (``os.replace``), so a
crash at any point leaves a manifest that names only complete, checksummed shards. A file whose
sha256 differs from the manifest is refused with :class:`~jaxparadigm.errors.InputError` naming it.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from jaxparadigm.errors import InputError, require_int
from jaxparadigm.retrieval.passages import Passage

__all__ = [
    "FORMAT",
    "MANIFEST",
    "new_manifest",
    "read_manifest",
    "write_manifest",
    "write_shard",
    "shard_embeddings",
    "shard_passages",
    "verify_shards",
    "remove_unreferenced",
    "sha256_file",
]

FORMAT = "jaxparadigm-index"
VERSION = 1
MANIFEST = "manifest.json"


def sha256_file(path: Path, chunk: int = 1 << 22) -> str:
    """Hex sha256 of a file's bytes, read in 4 MiB chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


def new_manifest(model: dict, shard_rows: int, build: dict) -> dict:
    """An empty index's manifest (status ``building``, no shards)."""
    require_int("shard_rows", shard_rows, 1)
    return {
        "format": FORMAT,
        "version": VERSION,
        "model": dict(model),
        "dtype": "float32",
        "shard_rows": shard_rows,
        "count": 0,
        "status": "building",
        "pending": None,
        "build": dict(build),
        "sources": [],
        "shards": [],
    }


def write_manifest(index_dir: Path, manifest: dict) -> None:
    """Replace ``manifest.json`` atomically (write a temporary file, fsync, ``os.replace``)."""
    tmp = index_dir / (MANIFEST + ".tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(manifest, fh, indent=1, ensure_ascii=False)
        fh.write("\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, index_dir / MANIFEST)


def read_manifest(index_dir: str | os.PathLike) -> dict:
    """The manifest of ``index_dir``, checked for format, version and internal consistency."""
    index_dir = Path(index_dir)
    path = index_dir / MANIFEST
    if not path.is_file():
        raise InputError(f"{index_dir}: no {MANIFEST}; expected an index built by `index build`")
    try:
        m = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(m, dict) or m.get("format") != FORMAT or m.get("version") != VERSION:
        raise InputError(f"{path}: not a {FORMAT} manifest of version {VERSION}")
    rows = [s.get("rows") for s in m.get("shards", [])]
    full = all(r == m["shard_rows"] for r in rows[:-1]) and all(
        isinstance(r, int) and 0 < r <= m["shard_rows"] for r in rows
    )
    if not full or sum(rows) != m.get("count"):
        raise InputError(
            f"{path}: shard rows {rows} do not add up to count={m.get('count')} with "
            f"shard_rows={m.get('shard_rows')}; the manifest is damaged"
        )
    return m


def _save_npy(path: Path, embeddings: np.ndarray) -> None:
    with open(path, "wb") as fh:
        np.save(fh, embeddings, allow_pickle=False)
        fh.flush()
        os.fsync(fh.fileno())


def write_shard(
    index_dir: Path, number: int, embeddings: np.ndarray, passages: Sequence[Passage]
) -> dict:
    """Write shard ``number`` (float32 ``[rows, dim]`` + its passages); returns its manifest entry."""
    embeddings = np.ascontiguousarray(embeddings, dtype=np.float32)
    if embeddings.ndim != 2 or embeddings.shape[0] != len(passages):
        raise ValueError(
            f"embeddings: got shape {embeddings.shape}, expected ({len(passages)}, dim)"
        )
    if not np.all(np.isfinite(embeddings)):
        raise ValueError(f"shard {number}: embeddings hold NaN or inf; refusing to write them")
    tmp_npy = index_dir / f"shard_{number:05d}.npy.tmp"
    tmp_jsonl = index_dir / f"shard_{number:05d}.jsonl.tmp"
    _save_npy(tmp_npy, embeddings)
    with open(tmp_jsonl, "w", encoding="utf-8") as fh:
        for p in passages:
            fh.write(json.dumps(p._asdict(), ensure_ascii=False) + "\n")
        fh.flush()
        os.fsync(fh.fileno())
    digests = {"embeddings": sha256_file(tmp_npy), "passages": sha256_file(tmp_jsonl)}
    name = f"shard_{number:05d}-{digests['embeddings'][:10]}"
    os.replace(tmp_npy, index_dir / f"{name}.npy")
    os.replace(tmp_jsonl, index_dir / f"{name}.jsonl")
    return {"name": name, "rows": len(passages), "sha256": digests}


def _checked(index_dir: Path, shard: dict, kind: str) -> Path:
    suffix = ".npy" if kind == "embeddings" else ".jsonl"
    path = index_dir / f"{shard['name']}{suffix}"
    if not path.is_file():
        raise InputError(f"{index_dir}: shard {shard['name']}: {path.name} is missing")
    got = sha256_file(path)
    if got != shard["sha256"][kind]:
        raise InputError(
            f"{index_dir}: shard {shard['name']}: {path.name} fails its checksum (sha256 "
            f"{got[:16]}..., manifest {shard['sha256'][kind][:16]}...); the shard is damaged: "
            "restore the file or rebuild the index"
        )
    return path


def shard_embeddings(index_dir: Path, shard: dict, dim: int, *, verify: bool = True) -> np.ndarray:
    """The shard's float32 ``[rows, dim]`` embeddings, memory-mapped read-only (checksum first)."""
    path = (
        _checked(index_dir, shard, "embeddings") if verify else index_dir / f"{shard['name']}.npy"
    )
    try:
        emb = np.load(path, mmap_mode="r", allow_pickle=False)
    except (ValueError, OSError) as exc:
        raise InputError(f"{index_dir}: shard {shard['name']}: unreadable .npy ({exc})") from None
    if emb.dtype != np.float32 or emb.shape != (shard["rows"], dim):
        raise InputError(
            f"{index_dir}: shard {shard['name']}: embeddings are {emb.dtype} {emb.shape}, "
            f"expected float32 ({shard['rows']}, {dim})"
        )
    return emb


def shard_passages(index_dir: Path, shard: dict, *, verify: bool = True) -> list[Passage]:
    """The shard's passages, in row order (checksum first)."""
    path = (
        _checked(index_dir, shard, "passages") if verify else index_dir / f"{shard['name']}.jsonl"
    )
    with open(path, encoding="utf-8") as fh:
        out = [Passage(**json.loads(line)) for line in fh]
    if len(out) != shard["rows"]:
        raise InputError(
            f"{index_dir}: shard {shard['name']}: {len(out)} passages, expected {shard['rows']}"
        )
    return out


def verify_shards(index_dir: Path, manifest: dict) -> Iterator[str]:
    """Check every shard file against the manifest; yields each verified shard's name."""
    for shard in manifest["shards"]:
        _checked(index_dir, shard, "embeddings")
        _checked(index_dir, shard, "passages")
        yield shard["name"]


def remove_unreferenced(index_dir: Path, manifest: dict) -> list[str]:
    """Delete shard files (and temporaries) the manifest does not name; returns their names."""
    keep = {f"{s['name']}{ext}" for s in manifest["shards"] for ext in (".npy", ".jsonl")}
    removed = []
    for path in sorted(index_dir.glob("shard_*")):
        if path.name not in keep:
            path.unlink()
            removed.append(path.name)
    return removed
