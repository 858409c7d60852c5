"""An index folder's inverted lists (IVF): centroids, row ids per list, rows list by list (C1.1).

The files::

    INDEX_DIR/ivf-<h>.centroids.npy   float32 [lists, dim]   the coarse quantiser (k-means)
    INDEX_DIR/ivf-<h>.offsets.npy     int64 [lists + 1]      list j holds positions
                                                             [offsets[j], offsets[j+1])
    INDEX_DIR/ivf-<h>.ids.npy         int64 [count]          corpus row at each position
    INDEX_DIR/ivf-<h>.rows.npy        float32 [count, dim]   rows[p] = X[ids[p]], list by list

``manifest["ivf"] = {name, lists, seed, iters, train_rows, rows, sha256: {centroids, offsets, ids,
rows}}`` records them (``<h>``: the start of the sha256 of the four files' digests, so new
lists never overwrite the files an older manifest names). Row ``r`` is in list
``a(r) = argmin_j ||X_r - c_j||^2`` (:func:`~jaxparadigm.retrieval.dense.kmeans.nearest`); within a
list, positions go in row order. Files are written under temporary names, then put in place,
then the manifest is replaced (the same commit protocol as the shards, C1.1): a crash leaves the
previous manifest, naming the previous lists or none.

:func:`train_ivf` (``jaxparadigm index ivf DIR --lists N``) trains and writes them;
:func:`extend_ivf` (called by ``index add`` before it commits) assigns the new rows to the
existing centroids and rewrites the lists; :func:`open_ivf` checks every file (sha256 against the
manifest, dtype, shape, offsets ``0 = o_0 <= o_1 <= ... = count``, ids a permutation of the rows,
finite centroids) and refuses a damaged one naming it.
"""

from __future__ import annotations

import hashlib
import os
import secrets
from pathlib import Path
from typing import NamedTuple

import numpy as np

from jaxparadigm.errors import InputError, require_int
from jaxparadigm.retrieval.index.owned_files import create_new
from jaxparadigm.retrieval.index.store import load_npy, sha256_file

__all__ = [
    "IVF_FILES",
    "IVFLists",
    "write_ivf",
    "open_ivf",
    "assign_rows",
    "list_sizes_text",
    "load_ivf_file",
    "check_lists",
]

#: The four files of an index's inverted lists, ``ivf-<h>.KIND.npy`` (module docstring).
IVF_FILES = ("centroids", "offsets", "ids", "rows")
_ASSIGN_CHUNK = 65536  # rows assigned per jitted call


class IVFLists(NamedTuple):
    """An index's inverted lists, opened and checked (memory-mapped read-only)."""

    centroids: np.ndarray  # float32 [lists, dim]
    offsets: np.ndarray  # int64 [lists + 1]
    ids: np.ndarray  # int64 [count]
    rows: np.ndarray  # float32 [count, dim]
    entry: dict  # the manifest's "ivf" record


def assign_rows(rows, centroids: np.ndarray, count: int, start: int = 0) -> np.ndarray:
    """Nearest centroid (int32) of rows ``[start, start + count)``; ``rows(lo, hi)`` returns
    float32 ``[hi - lo, dim]``. Jitted, ``_ASSIGN_CHUNK`` rows per call."""
    import jax.numpy as jnp

    from jaxparadigm.retrieval.dense.kmeans import assign

    c = jnp.asarray(centroids)
    out = np.empty(count, np.int32)
    for lo in range(0, count, _ASSIGN_CHUNK):
        hi = min(lo + _ASSIGN_CHUNK, count)
        out[lo:hi] = np.asarray(assign(jnp.asarray(rows(start + lo, start + hi)), c))
    return out


def _save(index_dir: Path, kind: str, array: np.ndarray) -> tuple[Path, str]:
    tmp = index_dir / f"ivf.{os.getpid()}.{secrets.token_hex(4)}.{kind}.npy.tmp"
    with create_new(tmp, text=False) as fh:
        np.save(fh, array, allow_pickle=False)
        fh.flush()
        os.fsync(fh.fileno())
    return tmp, sha256_file(tmp)


def write_ivf(
    index_dir: Path,
    centroids: np.ndarray,
    assignment: np.ndarray,
    gather,
    *,
    seed: int,
    iters: int,
    train_rows: int,
) -> dict:
    """Write the lists of ``assignment`` (int32 ``[count]``, one list per corpus row) with
    ``centroids``; ``gather(ids)`` returns float32 rows ``[len(ids), dim]``. Returns the
    manifest's ``ivf`` record (the caller replaces the manifest, then deletes old files)."""
    centroids = np.ascontiguousarray(centroids, np.float32)
    lists = centroids.shape[0]
    ids = np.argsort(assignment, kind="stable").astype(np.int64)  # row order within a list
    offsets = np.zeros(lists + 1, np.int64)
    np.cumsum(np.bincount(assignment, minlength=lists), out=offsets[1:])
    arrays = {"centroids": centroids, "offsets": offsets, "ids": ids, "rows": gather(ids)}
    saved = {kind: _save(index_dir, kind, np.ascontiguousarray(a)) for kind, a in arrays.items()}
    both = "".join(digest for _, digest in saved.values())  # new rows, new name: never overwritten
    name = f"ivf-{hashlib.sha256(both.encode()).hexdigest()[:10]}"
    for kind, (tmp, _) in saved.items():
        os.replace(tmp, index_dir / f"{name}.{kind}.npy")
    return {
        "name": name,
        "lists": lists,
        "seed": seed,
        "iters": iters,
        "train_rows": train_rows,
        "rows": len(ids),
        "sha256": {kind: digest for kind, (_, digest) in saved.items()},
    }


def load_ivf_file(index_dir: Path, entry: dict, kind: str, verify: bool = True) -> np.ndarray:
    """One of the lists' files (``kind`` in :data:`IVF_FILES`), memory-mapped, checksum first."""
    return _load(index_dir, entry, kind, verify)


def _load(index_dir: Path, entry: dict, kind: str, verify: bool) -> np.ndarray:
    path = index_dir / f"{entry['name']}.{kind}.npy"
    damaged = (
        f"the IVF lists are damaged: rerun `jaxparadigm index ivf {index_dir} --lists "
        f"{entry['lists']}`"
    )
    what = f"{index_dir}: IVF lists {entry['name']}: {path.name}"
    return load_npy(path, what, entry["sha256"][kind] if verify else None, damaged)


def _expect(index_dir: Path, entry: dict, kind: str, a: np.ndarray, dtype, shape) -> None:
    if a.dtype != dtype or a.shape != shape:
        raise InputError(
            f"{index_dir}: IVF lists {entry['name']}: {entry['name']}.{kind}.npy is {a.dtype} "
            f"{a.shape}, expected {np.dtype(dtype)} {shape}; the IVF lists are damaged"
        )


def open_ivf(
    index_dir: Path, entry: dict, dim: int, count: int, *, verify: bool = True
) -> IVFLists:
    """The lists ``entry`` names, every file checked (module docstring); ``count`` is the rows of
    the index state being opened: lists of another count are stale and refused."""
    lists = entry["lists"]
    if entry["rows"] != count:
        raise InputError(
            f"{index_dir}: IVF lists {entry['name']} cover {entry['rows']} rows, the index holds "
            f"{count}; rerun `jaxparadigm index ivf {index_dir} --lists {lists}`"
        )
    a = {kind: _load(index_dir, entry, kind, verify) for kind in IVF_FILES}
    _expect(index_dir, entry, "centroids", a["centroids"], np.float32, (lists, dim))
    _expect(index_dir, entry, "offsets", a["offsets"], np.int64, (lists + 1,))
    _expect(index_dir, entry, "ids", a["ids"], np.int64, (count,))
    _expect(index_dir, entry, "rows", a["rows"], np.float32, (count, dim))
    where = f"{index_dir}: IVF lists {entry['name']}"
    off = np.asarray(a["offsets"])
    if off[0] != 0 or off[-1] != count or np.any(np.diff(off) < 0):
        raise InputError(
            f"{where}: {entry['name']}.offsets.npy is not 0 <= ... <= {count} nondecreasing; "
            "the IVF lists are damaged"
        )
    ids = np.asarray(a["ids"])
    if count and (ids.min() < 0 or ids.max() >= count or np.any(np.bincount(ids) != 1)):
        raise InputError(
            f"{where}: {entry['name']}.ids.npy is not a permutation of the {count} rows; the IVF "
            "lists are damaged"
        )
    if not np.all(np.isfinite(a["centroids"])):
        raise InputError(f"{where}: {entry['name']}.centroids.npy holds NaN or inf; damaged")
    return IVFLists(a["centroids"], off, ids, a["rows"], entry)


def list_sizes_text(offsets: np.ndarray) -> str:
    """``lists 256, rows per list min 12 / median 40 / max 97, imbalance 1.31`` (imbalance: FAISS's
    ``sum(size^2) * lists / count^2``, 1 for equal lists)."""
    sizes = np.diff(np.asarray(offsets))
    n = int(sizes.sum())
    imbalance = float(np.sum(sizes.astype(np.float64) ** 2) * len(sizes) / n**2) if n else 0.0
    return (
        f"lists {len(sizes)}, rows per list min {int(sizes.min())} / median "
        f"{int(np.median(sizes))} / max {int(sizes.max())}, {int(np.sum(sizes == 0))} empty, "
        f"imbalance {imbalance:.2f}"
    )


def check_lists(lists: object, count: int) -> int:
    """``lists`` if an int in ``[1, count]`` (each list needs a row to start from)."""
    return require_int("lists", lists, 1, max(count, 1))
