"""k-means in JAX: the coarse quantiser of an inverted-file (IVF) index (C1.1).

For rows ``x_i`` and centroids ``c_j`` the nearest centroid is

    a(i) = argmin_j ||x_i - c_j||^2 = argmax_j (x_i . c_j - ||c_j||^2 / 2)

(ties to the lower ``j``), one matmul per block of rows. Lloyd's algorithm repeats, ``iters``
times: assign every training row, then move each centroid to the mean of its rows,
``c_j = sum_{a(i) = j} x_i / |{i : a(i) = j}|``.

**Init** (documented, FAISS's default rather than k-means++): ``lists`` distinct training rows
drawn by ``numpy.random.default_rng(seed)`` (:func:`kmeans_init`). k-means++ needs ``lists``
sequential passes over the data, too slow for 1,024 lists on 2 cores.

**Training sample.** At most ``max_points_per_list * lists`` rows (FAISS's
``max_points_per_centroid``, 256) drawn by the same generator, in row order.

**Empty clusters.** A centroid left with no rows takes the training row farthest from its own
centroid: the ``e`` empty centroids (in index order) take the ``e`` farthest rows (farthest
first, ties to the lower row), so no list stays empty while rows remain to split.

Everything is deterministic for a given ``seed``; ``tests/retrieval/dense/test_kmeans.py`` checks
the assignments against a numpy implementation of the same rules from the same init.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import chex
import jax
import jax.numpy as jnp
import numpy as np

from jaxparadigm.errors import InputError, require_int
from jaxparadigm.retrieval.dense.vector_search import RowSource

__all__ = ["KMeans", "kmeans", "kmeans_init", "training_rows", "assign", "nearest"]

MAX_POINTS_PER_LIST = 256
_BLOCK = 4096  # rows per assignment step: a [4096, lists] score block


class KMeans(NamedTuple):
    """Trained ``centroids`` float32 ``[lists, dim]`` and the training rows' ``assignment``."""

    centroids: np.ndarray
    assignment: np.ndarray  # int32 [train_rows]
    train_rows: int


def training_rows(n: int, lists: int, seed: int, max_points_per_list: int) -> np.ndarray:
    """Sorted row numbers of the training sample: all ``n`` rows, or a seeded draw of
    ``max_points_per_list * lists`` of them."""
    cap = max_points_per_list * lists
    if n <= cap:
        return np.arange(n)
    return np.sort(np.random.default_rng(seed).choice(n, cap, replace=False))


def kmeans_init(n: int, lists: int, seed: int) -> np.ndarray:
    """Positions (in the training sample) of the ``lists`` rows that start as centroids."""
    return np.random.default_rng([seed, 1]).choice(n, lists, replace=False)


def nearest(x: jax.Array, centroids: jax.Array) -> jax.Array:
    """``argmax_j (x_i . c_j - ||c_j||^2 / 2)`` for each row: int32 ``[n]``, ties to lower ``j``."""
    half = 0.5 * jnp.sum(centroids * centroids, axis=1)
    return jnp.argmax(x @ centroids.T - half[None, :], axis=1).astype(jnp.int32)


def _blocked(x: jax.Array, fn):
    """``fn`` over ``x`` ``[n, d]`` in blocks of ``_BLOCK`` rows (padded), results ``[n, ...]``."""
    n = x.shape[0]
    pad = -n % _BLOCK
    xb = jnp.pad(x, ((0, pad), (0, 0))).reshape(-1, min(_BLOCK, n + pad), x.shape[1])
    out = jax.lax.map(fn, xb)
    return out.reshape(-1, *out.shape[2:])[:n]


@jax.jit
def assign(x: jax.Array, centroids: jax.Array) -> jax.Array:
    """Nearest centroid of every row of ``x`` ``[n, d]`` (:func:`nearest`), in blocks."""
    return _blocked(x, lambda b: nearest(b, centroids))


@functools.partial(jax.jit, static_argnames="iters")
def _lloyd(x: jax.Array, init: jax.Array, iters: int) -> tuple[jax.Array, jax.Array]:
    lists = init.shape[0]

    def step(c, _):
        a = assign(x, c)
        sums = jax.ops.segment_sum(x, a, num_segments=lists)
        counts = jax.ops.segment_sum(jnp.ones_like(a, jnp.float32), a, num_segments=lists)
        new = sums / jnp.maximum(counts, 1.0)[:, None]
        # empty clusters: the e-th empty centroid takes the e-th farthest training row
        far_d = jnp.sum((x - c[a]) ** 2, axis=1)
        _, far = jax.lax.top_k(far_d, min(lists, x.shape[0]))
        empty = counts == 0
        rank = jnp.clip(jnp.cumsum(empty) - 1, 0, far.shape[0] - 1)
        new = jnp.where(empty[:, None], x[far[rank]], new)
        return new, None

    c, _ = jax.lax.scan(step, init, None, length=iters)
    return c, assign(x, c)


def kmeans(
    x: np.ndarray | RowSource,
    lists: int,
    *,
    seed: int = 0,
    iters: int = 10,
    max_points_per_list: int = MAX_POINTS_PER_LIST,
) -> KMeans:
    """Train ``lists`` centroids on the rows of ``x`` (float32 ``[n, dim]``, or an index's
    shards as a :class:`RowSource`); see the module docstring for the init, sample and empty
    clusters."""
    if isinstance(x, RowSource):
        n, dim = x.rows, x.dim
    elif isinstance(x, np.ndarray | jax.Array) and x.ndim == 2:
        n, dim = x.shape[0], x.shape[1]
    else:
        raise InputError(f"x: got {getattr(x, 'shape', type(x).__name__)}, expected [n, dim] rows")
    lists = require_int("lists", lists, 1)
    seed = require_int("seed", seed, 0)
    iters = require_int("iters", iters, 0)
    max_points_per_list = require_int("max_points_per_list", max_points_per_list, 1)
    if lists > n:
        raise InputError(f"lists: got {lists}, expected at most the {n} rows to cluster")
    rows = training_rows(n, lists, seed, max_points_per_list)
    picked = x.gather(rows) if isinstance(x, RowSource) else np.asarray(x)[rows]
    train = jnp.asarray(np.asarray(picked, np.float32))
    if not bool(jnp.all(jnp.isfinite(train))):
        raise InputError("x: holds NaN or inf, expected finite rows to cluster")
    init = train[kmeans_init(len(rows), lists, seed)]
    centroids, a = _lloyd(train, init, iters)
    chex.assert_shape(centroids, (lists, dim))
    chex.assert_tree_all_finite(centroids)
    return KMeans(np.asarray(centroids), np.asarray(a), len(rows))
