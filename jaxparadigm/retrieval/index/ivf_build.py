"""Train an index folder's inverted lists, and keep them current when rows are added (C1.1).

:func:`train_ivf` (``jaxparadigm index ivf DIR --lists N``, ``index build --ivf N``) holds the
folder's lock, opens the committed index (every shard checked), trains ``lists`` centroids by
k-means in JAX (:func:`~jaxparadigm.retrieval.dense.kmeans.kmeans`), assigns every row to its
nearest centroid and writes the lists (:func:`~jaxparadigm.retrieval.index.ivf_store.write_ivf`),
then replaces the manifest and deletes the lists it replaced.

:func:`extend_ivf` is what ``index add`` runs before it commits: the new rows
``[ivf.rows, count)`` go to their nearest existing centroid (the centroids are not retrained:
retrain with ``index ivf`` when the corpus has changed a lot; ``index info`` shows the lists'
imbalance), and every list is rewritten with them.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np

from jaxparadigm.errors import InputError, require_int
from jaxparadigm.retrieval.dense.kmeans import MAX_POINTS_PER_LIST, kmeans
from jaxparadigm.retrieval.dense.vector_search import RowSource
from jaxparadigm.retrieval.index.ivf_store import assign_rows, check_lists, open_ivf, write_ivf
from jaxparadigm.retrieval.index.owned_files import index_lock, remove_unreferenced
from jaxparadigm.retrieval.index.reader import Index
from jaxparadigm.retrieval.index.store import read_manifest, shard_embeddings, write_manifest

__all__ = ["train_ivf", "extend_ivf"]


def train_ivf(
    index_dir: str | os.PathLike,
    lists: int,
    *,
    seed: int = 0,
    iters: int = 10,
    max_points_per_list: int = MAX_POINTS_PER_LIST,
) -> dict:
    """Train and write ``lists`` inverted lists for the index in ``index_dir``; returns the
    manifest (its ``ivf`` record has the training time in ``seconds``)."""
    index_dir = Path(index_dir)
    seed = require_int("seed", seed, 0)
    iters = require_int("iters", iters, 0)
    max_points_per_list = require_int("max_points_per_list", max_points_per_list, 1)
    read_manifest(index_dir)  # an index, before a lock file is created in the folder
    with index_lock(index_dir, "index ivf"):
        m = read_manifest(index_dir)
        if m["status"] != "complete":
            raise InputError(
                f"{index_dir}: an `index build`/`add` was interrupted (status {m['status']!r}); "
                "rerun it to finish, then train the IVF lists"
            )
        check_lists(lists, m["count"])
        if m["count"] < 1:
            raise InputError(f"{index_dir}: the index holds no rows; expected rows to cluster")
        t0 = time.perf_counter()
        index = Index(index_dir)
        source = RowSource(index.shard_arrays)
        km = kmeans(source, lists, seed=seed, iters=iters, max_points_per_list=max_points_per_list)
        assignment = assign_rows(source.take, km.centroids, source.rows)
        entry = write_ivf(
            index_dir,
            km.centroids,
            assignment,
            source.gather,
            seed=seed,
            iters=iters,
            train_rows=km.train_rows,
        )
        m["ivf"] = {**entry, "seconds": round(time.perf_counter() - t0, 3)}
        write_manifest(index_dir, m)
        remove_unreferenced(index_dir, m)
        return m


def extend_ivf(index_dir: Path, m: dict) -> dict:
    """The ``ivf`` record for ``m`` (rows ``[0, m["count"])``) from ``m["ivf"]`` (its first
    ``m["ivf"]["rows"]`` rows): new rows assigned to the existing centroids, lists rewritten."""
    old = m["ivf"]
    dim = m["model"]["dim"]
    lists = open_ivf(index_dir, old, dim, old["rows"])
    source = RowSource([shard_embeddings(index_dir, s, dim) for s in m["shards"]])
    assignment = np.empty(source.rows, np.int32)
    sizes = np.diff(lists.offsets)
    assignment[lists.ids] = np.repeat(np.arange(old["lists"], dtype=np.int32), sizes)
    new = source.rows - old["rows"]
    assignment[old["rows"] :] = assign_rows(source.take, lists.centroids, new, start=old["rows"])
    entry = write_ivf(
        index_dir,
        np.asarray(lists.centroids),
        assignment,
        source.gather,
        seed=old["seed"],
        iters=old["iters"],
        train_rows=old["train_rows"],
    )
    return {**entry, "seconds": old.get("seconds", 0.0)}
