"""The persistent index directory: a JSON manifest plus fixed-size, checksummed shards (C1.1).

The files::

    INDEX_DIR/manifest.json          format, model (name, dim, max_seq_length), dtype, shard_rows,
                                     count, status, build config, sources, shards (name, rows,
                                     sha256 of each file)
    INDEX_DIR/shard_00000-<h>.npy    float32 [rows, dim] unit embeddings (np.load(mmap_mode="r"))
    INDEX_DIR/shard_00000-<h>.jsonl  one passage per line: {"source", "start", "end", "text"}
                                     and, when the build recorded one, its "context" (file name
                                     and section titles: documents.outline; a line without
                                     it has the context "")

Row ``r`` of the corpus is row ``r % shard_rows`` of shard ``r // shard_rows``: every shard holds
``shard_rows`` rows except the last. A shard's files are written under a fresh name (``<h>`` is the
start of the embeddings' sha256), then the manifest is replaced atomically (``os.replace``), so a
crash at any point leaves a manifest that names only complete, checksummed shards. A file whose
sha256 differs from the manifest is refused with :class:`~jaxparadigm.errors.InputError` naming it.
Every file of the folder is opened by :func:`open_index_file`, which reads only a regular file: a
FIFO, folder or device in a file's place is refused at once, naming it (never blocked on).

Files are created without following a link and only the writer's own names are ever deleted
(:mod:`~jaxparadigm.retrieval.index.owned_files`, which also holds the lock). ``manifest.json``
and every shard line are parsed by :func:`~jaxparadigm.common.bounded_reading.read_json`:
an integer longer than ``MAX_JSON_INT_DIGITS`` digits is a damaged index naming the file, never
the bare ValueError of Python's int-string limit.
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
from typing import BinaryIO

import numpy as np

from jaxparadigm.common.bounded_reading import (
    JsonLineError,
    NotRegularFile,
    open_regular,
    read_json,
)
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
    "shard_records",
    "open_passages",
    "verify_shards",
    "remove_unreferenced",
    "sha256_file",
    "open_index_file",
    "load_npy",
]

VERSION = 1
UNIT_NORM_TOL = 1e-3  # |norm - 1| allowed in a stored row (float32 normalisation is ~1e-7)


_INDEX_DAMAGED = "the index is damaged: restore the file or rebuild the index"
_SHARD_DAMAGED = "the shard is damaged: restore the file or rebuild the index"


def open_index_file(
    path: Path, what: str, missing: str | None = None, damaged: str = _INDEX_DAMAGED
) -> BinaryIO:
    """``path``, a file of an index folder (``what`` names it in messages), opened for reading:
    the one way the index's files are opened (C1.1). It must be a regular file
    (:func:`~jaxparadigm.common.bounded_reading.open_regular`: a FIFO in its place is refused at
    once, never blocked on). One :class:`InputError` naming it otherwise: ``missing`` (default
    ``"<what> is missing"``), ``"<what> is a FIFO, expected a regular file; <damaged>"`` or
    ``"<what> cannot be read (<reason>)"``."""
    try:
        return open_regular(path)
    except FileNotFoundError:
        raise InputError(missing or f"{what} is missing") from None
    except NotRegularFile as exc:
        raise InputError(f"{what} is {exc.kind}, expected a regular file; {damaged}") from None
    except OSError as exc:
        raise InputError(f"{what} cannot be read ({exc.strerror})") from None


def _digest(fh: BinaryIO, chunk: int = 1 << 22) -> str:
    h = hashlib.sha256()
    while block := fh.read(chunk):
        h.update(block)
    return h.hexdigest()


def sha256_file(path: Path) -> str:
    """Hex sha256 of a file's bytes, read in 4 MiB chunks (opened by :func:`open_index_file`)."""
    with open_index_file(path, str(path)) as fh:
        return _digest(fh)


def load_npy(path: Path, what: str, sha256: str | None, damaged: str) -> np.ndarray:
    """The ``.npy`` file ``path`` memory-mapped read-only, once :func:`open_index_file` has
    checked it is a regular file and, given ``sha256``, that its bytes have that digest (else
    ``"<what> fails its checksum (...); <damaged>"``). A file numpy cannot parse:
    ``"<what> is not a readable .npy file (<why>); <damaged>"`` -- one sentence each."""
    with open_index_file(path, what, damaged=damaged) as fh:
        got = _digest(fh) if sha256 is not None else ""
    if sha256 is not None and got != sha256:
        raise InputError(
            f"{what} fails its checksum (sha256 {got[:16]}..., manifest {sha256[:16]}...); "
            f"{damaged}"
        )
    try:
        return np.load(path, mmap_mode="r", allow_pickle=False)
    except FileNotFoundError:
        raise InputError(f"{what} is missing") from None
    except (ValueError, OSError) as exc:
        raise InputError(f"{what} is not a readable .npy file ({exc}); {damaged}") from None


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
    """Replace ``manifest.json`` atomically: a uniquely named temporary file, fsync,
    ``os.replace``."""
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
    missing = f"{index_dir}: no {MANIFEST}; expected an index built by `index build`"
    try:
        with open_index_file(path, str(path), missing) as fh:
            m = read_json(fh.read())
    except JsonLineError as exc:
        raise InputError(f"{path}: not valid JSON ({exc}); the index is damaged") from None
    except OSError as exc:
        raise InputError(f"{path} cannot be read ({exc.strerror})") from None
    check_manifest(m, path)
    return m


def committed(manifest: dict) -> dict:
    """The index as of its last finished build or add: ``manifest`` itself when complete, the
    state an interrupted (or running) add started from (``pending.base``) otherwise. An
    interrupted *build* has no committed state: it is returned as is, status ``building`` (C1.1).
    """
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
    index_dir: Path,
    number: int,
    embeddings: np.ndarray,
    passages: Sequence[Passage],
    contexts: Sequence[str] | None = None,
) -> dict:
    """Write shard ``number`` (float32 ``[rows, dim]`` + its passages, each line with its
    ``contexts`` entry when that is not empty); returns its manifest entry."""
    embeddings = np.ascontiguousarray(embeddings, dtype=np.float32)
    if embeddings.ndim != 2 or embeddings.shape[0] != len(passages):
        raise ValueError(
            f"embeddings: got shape {embeddings.shape}, expected ({len(passages)}, dim)"
        )
    contexts = [""] * len(passages) if contexts is None else list(contexts)
    if len(contexts) != len(passages):
        raise ValueError(f"contexts: got {len(contexts)}, expected {len(passages)} (one per row)")
    if not np.all(np.isfinite(embeddings)):
        raise ValueError(f"shard {number}: embeddings hold NaN or inf; refusing to write them")
    unique = f"{os.getpid()}.{secrets.token_hex(4)}"
    tmp_npy = index_dir / f"shard_{number:05d}.{unique}.npy.tmp"
    tmp_jsonl = index_dir / f"shard_{number:05d}.{unique}.jsonl.tmp"
    _save_npy(tmp_npy, embeddings)
    with create_new(tmp_jsonl, text=True) as fh:
        for p, context in zip(passages, contexts, strict=True):
            record = p._asdict() | ({"context": context} if context else {})
            fh.write(json.dumps(record, ensure_ascii=False) + "\n")
        fh.flush()
        os.fsync(fh.fileno())
    digests = {"embeddings": sha256_file(tmp_npy), "passages": sha256_file(tmp_jsonl)}
    name = f"shard_{number:05d}-{digests['embeddings'][:10]}"
    os.replace(tmp_npy, index_dir / f"{name}.npy")
    os.replace(tmp_jsonl, index_dir / f"{name}.jsonl")
    return {"name": name, "rows": len(passages), "sha256": digests}


def _shard_file(index_dir: Path, shard: dict, suffix: str) -> tuple[Path, str]:
    """A shard's file (``suffix`` ``.npy`` or ``.jsonl``) and its name for messages."""
    path = index_dir / f"{shard['name']}{suffix}"
    return path, f"{index_dir}: shard {shard['name']}: {path.name}"


def _compare(what: str, got: str, want: str) -> None:
    if got != want:
        raise InputError(
            f"{what} fails its checksum (sha256 {got[:16]}..., manifest {want[:16]}...); "
            f"{_SHARD_DAMAGED}"
        )


def _checked(index_dir: Path, shard: dict, kind: str) -> Path:
    path, what = _shard_file(index_dir, shard, ".npy" if kind == "embeddings" else ".jsonl")
    try:
        with open_index_file(path, what, damaged=_SHARD_DAMAGED) as fh:
            got = _digest(fh)
    except OSError as exc:
        raise InputError(f"{what} cannot be read ({exc.strerror})") from None
    _compare(what, got, shard["sha256"][kind])
    return path


def open_passages(index_dir: Path, shard: dict) -> mmap.mmap | bytes:
    """The shard's ``.jsonl`` mapped read-only (``b""`` when empty): the map keeps its bytes
    readable after a newer manifest's writer deletes the name, and holds no file descriptor
    (:class:`~jaxparadigm.retrieval.index.reader.Index` maps every shard's at open)."""
    path, what = _shard_file(index_dir, shard, ".jsonl")
    with open_index_file(path, what, damaged=_SHARD_DAMAGED) as fh:
        try:
            if os.fstat(fh.fileno()).st_size == 0:
                return b""
            return mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        except OSError as exc:
            raise InputError(f"{what} cannot be read ({exc.strerror})") from None


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
    path, what = _shard_file(index_dir, shard, ".npy")
    emb = load_npy(path, what, shard["sha256"]["embeddings"] if verify else None, _SHARD_DAMAGED)
    if emb.dtype != np.float32 or emb.shape != (shard["rows"], dim):
        raise InputError(
            f"{index_dir}: shard {shard['name']}: embeddings are {emb.dtype} {emb.shape}, "
            f"expected float32 ({shard['rows']}, {dim})"
        )
    _unit_rows(index_dir, shard, emb)
    return emb


_FIELDS = {"source": str, "start": int, "end": int, "text": str}


def _passage(where: str, line: bytes) -> tuple[Passage, str]:
    try:
        record = read_json(line)
    except JsonLineError as exc:
        raise InputError(f"{where}: not a JSON line ({exc}); the index is damaged") from None
    fields = _FIELDS | (
        {"context": str} if isinstance(record, dict) and "context" in record else {}
    )
    if not isinstance(record, dict) or set(record) != set(fields):
        got = sorted(record) if isinstance(record, dict) else type(record).__name__
        raise InputError(
            f"{where}: got {got}, expected an object with keys {sorted(_FIELDS)} (and "
            "optionally 'context')"
        )
    for key, kind in fields.items():
        if isinstance(record[key], bool) or not isinstance(record[key], kind):
            raise InputError(
                f"{where}: field {key!r} is {type(record[key]).__name__}, expected {kind.__name__}"
            )
    if not 0 <= record["start"] <= record["end"]:
        raise InputError(
            f"{where}: offsets [{record['start']}:{record['end']}], expected 0 <= start <= end"
        )
    context = record.pop("context", "")
    return Passage(**record), context


def shard_passages(
    index_dir: Path, shard: dict, *, verify: bool = True, opened: mmap.mmap | bytes | None = None
) -> list[Passage]:
    """The shard's passages, in row order (:func:`shard_records` without the contexts)."""
    return shard_records(index_dir, shard, verify=verify, opened=opened)[0]


def shard_records(
    index_dir: Path, shard: dict, *, verify: bool = True, opened: mmap.mmap | bytes | None = None
) -> tuple[list[Passage], list[str]]:
    """The shard's passages and their contexts (``""`` where a line has none), in row order
    (checksum first; each line checked: keys and types), read from ``opened``
    (:func:`open_passages`) when given, else from the file's name.

    Lines are split on ``"\\n"`` only: a passage's text may hold U+2028/U+2029/U+0085."""
    path, what = _shard_file(index_dir, shard, ".jsonl")
    try:
        if opened is not None:
            raw = opened[:]
        else:
            with open_index_file(path, what, damaged=_SHARD_DAMAGED) as fh:
                raw = fh.read()
    except OSError as exc:
        raise InputError(f"{what} cannot be read ({exc.strerror})") from None
    if verify:
        _compare(what, hashlib.sha256(raw).hexdigest(), shard["sha256"]["passages"])
    lines = raw.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    where = f"{index_dir}: shard {shard['name']}: {path.name} line"
    out = [_passage(f"{where} {n}", line) for n, line in enumerate(lines, start=1)]
    if len(out) != shard["rows"]:
        raise InputError(
            f"{index_dir}: shard {shard['name']}: {len(out)} passages, expected {shard['rows']}"
        )
    return [p for p, _ in out], [c for _, c in out]


def verify_shards(
    index_dir: Path, manifest: dict, kinds: Sequence[str] = ("embeddings", "passages")
) -> Iterator[str]:
    """Check every shard file (of ``kinds``) against the manifest's sha256; yields each verified
    shard's name."""
    for shard in manifest["shards"]:
        for kind in kinds:
            _checked(index_dir, shard, kind)
        yield shard["name"]
