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

Files are created without following a link and only the writer's own names are ever deleted
(:mod:`~jaxparadigm.retrieval.index.owned_files`, which also holds the lock). ``manifest.json``
and every shard line are parsed by :func:`~jaxparadigm.common.bounded_reading.read_json`:
an integer longer than ``MAX_JSON_INT_DIGITS`` digits is a damaged index naming the file, never
the bare ValueError of Python's int-string limit (issue 34).
"""

from __future__ import annotations

import copy
import hashlib
import json
import mmap
import os
import secrets
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from jaxparadigm.common.bounded_reading import JsonLineError, read_json
from jaxparadigm.errors import InputError, require_int
from jaxparadigm.retrieval.documents.passages import Passage
from jaxparadigm.retrieval.index.manifest_schema import check_manifest
from jaxparadigm.retrieval.index.owned_files import (
    FORMAT,
    LOCK,
    MANIFEST,
    create_new,
    index_lock,
    remove_unreferenced,
)

__all__ = [
    "FORMAT",
    "MANIFEST",
    "new_manifest",
    "read_manifest",
    "check_manifest",
    "index_lock",
    "committed",
    "LOCK",
    "write_manifest",
    "write_shard",
    "shard_embeddings",
    "shard_passages",
    "open_passages",
    "verify_shards",
    "remove_unreferenced",
    "sha256_file",
]

VERSION = 1
UNIT_NORM_TOL = 1e-3  # |norm - 1| allowed in a stored row (float32 normalisation is ~1e-7)


def sha256_file(path: Path, chunk: int = 1 << 22) -> str:
    """Hex sha256 of a file's bytes, read in 4 MiB chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


def new_manifest(model: dict, shard_rows: int, build: dict) -> dict:
    """An empty index's manifest (status ``building``, no shards)."""
    shard_rows = require_int("shard_rows", shard_rows, 1)
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
    """Replace ``manifest.json`` atomically (a uniquely named temporary file, fsync, ``os.replace``)."""
    tmp = index_dir / f"{MANIFEST}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    with create_new(tmp, text=True) as fh:
        json.dump(manifest, fh, indent=1, ensure_ascii=False)
        fh.write("\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, index_dir / MANIFEST)


def read_manifest(index_dir: str | os.PathLike) -> dict:
    """The manifest of ``index_dir``, checked against the schema (:func:`check_manifest`)."""
    index_dir = Path(index_dir)
    path = index_dir / MANIFEST
    if not path.is_file():
        raise InputError(f"{index_dir}: no {MANIFEST}; expected an index built by `index build`")
    try:
        m = read_json(path.read_bytes())
    except JsonLineError as exc:
        raise InputError(f"{path}: not valid JSON ({exc}); the index is damaged") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot be read ({exc.strerror})") from None
    check_manifest(m, path)
    return m


def committed(manifest: dict) -> dict:
    """The index as of its last finished build or add: ``manifest`` itself when complete, the
    state an interrupted (or running) add started from (``pending.base``) otherwise. An
    interrupted *build* has no committed state: it is returned as is (status ``building``) (C1.1)."""
    base = (manifest.get("pending") or {}).get("base")
    if base is None:
        return manifest
    return {**manifest, **copy.deepcopy(base), "status": "complete", "pending": None}


def _save_npy(path: Path, embeddings: np.ndarray) -> None:
    with create_new(path, text=False) as fh:
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
    unique = f"{os.getpid()}.{secrets.token_hex(4)}"
    tmp_npy = index_dir / f"shard_{number:05d}.{unique}.npy.tmp"
    tmp_jsonl = index_dir / f"shard_{number:05d}.{unique}.jsonl.tmp"
    _save_npy(tmp_npy, embeddings)
    with create_new(tmp_jsonl, text=True) as fh:
        for p in passages:
            fh.write(json.dumps(p._asdict(), ensure_ascii=False) + "\n")
        fh.flush()
        os.fsync(fh.fileno())
    digests = {"embeddings": sha256_file(tmp_npy), "passages": sha256_file(tmp_jsonl)}
    name = f"shard_{number:05d}-{digests['embeddings'][:10]}"
    os.replace(tmp_npy, index_dir / f"{name}.npy")
    os.replace(tmp_jsonl, index_dir / f"{name}.jsonl")
    return {"name": name, "rows": len(passages), "sha256": digests}


def _compare(index_dir: Path, shard: dict, kind: str, name: str, got: str) -> None:
    if got != shard["sha256"][kind]:
        raise InputError(
            f"{index_dir}: shard {shard['name']}: {name} fails its checksum (sha256 "
            f"{got[:16]}..., manifest {shard['sha256'][kind][:16]}...); the shard is damaged: "
            "restore the file or rebuild the index"
        )


def _checked(index_dir: Path, shard: dict, kind: str) -> Path:
    suffix = ".npy" if kind == "embeddings" else ".jsonl"
    path = index_dir / f"{shard['name']}{suffix}"
    if not path.is_file():
        raise InputError(f"{index_dir}: shard {shard['name']}: {path.name} is missing")
    try:
        got = sha256_file(path)
    except OSError as exc:  # gone since is_file (a newer manifest committed), or unreadable
        raise InputError(
            f"{index_dir}: shard {shard['name']}: {path.name} cannot be read ({exc.strerror})"
        ) from None
    _compare(index_dir, shard, kind, path.name, got)
    return path


def open_passages(index_dir: Path, shard: dict) -> mmap.mmap | bytes:
    """The shard's ``.jsonl`` mapped read-only (``b""`` when empty): the map keeps its bytes
    readable after a newer manifest's writer deletes the name, and holds no file descriptor
    (:class:`~jaxparadigm.retrieval.index.reader.Index` maps every shard's at open)."""
    path = index_dir / f"{shard['name']}.jsonl"
    try:
        with open(path, "rb") as fh:
            if os.fstat(fh.fileno()).st_size == 0:
                return b""
            return mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    except OSError as exc:
        what = "is missing" if isinstance(exc, FileNotFoundError) else f"({exc.strerror})"
        raise InputError(f"{index_dir}: shard {shard['name']}: {path.name} {what}") from None


def _unit_rows(index_dir: Path, shard: dict, emb: np.ndarray, block: int = 1 << 16) -> None:
    for lo in range(0, emb.shape[0], block):
        norms = np.linalg.norm(np.asarray(emb[lo : lo + block], np.float64), axis=1)
        bad = np.flatnonzero(~(np.abs(norms - 1.0) <= UNIT_NORM_TOL))  # NaN compares False
        if bad.size:
            row = int(bad[0])
            raise InputError(
                f"{index_dir}: shard {shard['name']}: row {lo + row} has norm "
                f"{norms[row]:.6g}, expected a finite unit vector (|norm - 1| <= {UNIT_NORM_TOL}; "
                f"{bad.size} such row(s) in this block); the shard is damaged: rebuild the index"
            )


def shard_embeddings(index_dir: Path, shard: dict, dim: int, *, verify: bool = True) -> np.ndarray:
    """The shard's float32 ``[rows, dim]`` embeddings, memory-mapped read-only (checksum first).

    Every row must be finite with ``|norm - 1| <= UNIT_NORM_TOL`` (cosine scores are dot
    products): a NaN row, or one scaled x1000, is refused naming the shard and the row."""
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
    _unit_rows(index_dir, shard, emb)
    return emb


def _passage(where: str, line: bytes) -> Passage:
    try:
        record = read_json(line)
    except JsonLineError as exc:
        raise InputError(f"{where}: not a JSON line ({exc}); the index is damaged") from None
    fields = {"source": str, "start": int, "end": int, "text": str}
    if not isinstance(record, dict) or set(record) != set(fields):
        got = sorted(record) if isinstance(record, dict) else type(record).__name__
        raise InputError(f"{where}: got {got}, expected an object with keys {sorted(fields)}")
    for key, kind in fields.items():
        if isinstance(record[key], bool) or not isinstance(record[key], kind):
            raise InputError(
                f"{where}: field {key!r} is {type(record[key]).__name__}, expected {kind.__name__}"
            )
    if not 0 <= record["start"] <= record["end"]:
        raise InputError(
            f"{where}: offsets [{record['start']}:{record['end']}], expected 0 <= start <= end"
        )
    return Passage(**record)


def shard_passages(
    index_dir: Path, shard: dict, *, verify: bool = True, opened: mmap.mmap | bytes | None = None
) -> list[Passage]:
    """The shard's passages, in row order (checksum first; each line checked: keys and types),
    read from ``opened`` (:func:`open_passages`) when given, else from the file's name.

    Lines are split on ``"\\n"`` only: a passage's text may hold U+2028/U+2029/U+0085."""
    path = index_dir / f"{shard['name']}.jsonl"
    try:
        if opened is not None:
            raw = opened[:]
        else:
            path = _checked(index_dir, shard, "passages") if verify else path
            raw = path.read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: cannot be read ({exc.strerror})") from None
    if opened is not None and verify:
        _compare(index_dir, shard, "passages", path.name, hashlib.sha256(raw).hexdigest())
    lines = raw.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    where = f"{index_dir}: shard {shard['name']}: {path.name} line"
    out = [_passage(f"{where} {n}", line) for n, line in enumerate(lines, start=1)]
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
