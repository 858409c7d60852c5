"""Search an index's inverted lists: probe the ``nprobe`` nearest lists, score their rows (C1.1).

For unit queries ``Q [q, d]``, centroids ``C [L, d]`` and rows ``X``:

1. **probe**: each query's ``nprobe`` lists nearest by ``||Q_i - C_j||^2``, i.e. the top
   ``nprobe`` of ``Q_i . C_j - ||C_j||^2 / 2`` (the rule rows were assigned by, so a query
   lands in the list its nearest rows were put in);
2. **scan**: every row of those lists is scored in float32, ``s[i, r] = Q_i . X_r`` (the
   index's own rows, laid out list by list, so a list is one contiguous read);
3. **top-k** of the scanned rows, ties to the lower row id (as the exact search).

The result is exact whenever the true top ``k`` lies in the probed lists; with ``nprobe = L``
every row is scanned and the result *is* the exact search's (a test pins both).

**Layout.** Lists are cut into chunks of ``chunk_rows`` rows (the last chunk of a list padded,
its padding masked with row id ``-1``). On ``D`` devices the lists are split into ``D`` runs of
about ``n / D`` rows; device ``d`` holds its run's chunks plus one all-padding chunk. Per batch,
the host plans *tiles* (:mod:`~jaxparadigm.retrieval.dense.ivf_plan`): a tile is one chunk of a
probed list and up to ``G`` of the queries probing that list, scored by one matrix product
``[C, d] x [d, G]``; a device's tiles are sorted by chunk. ``G = 1`` is the row-major scan (a
(query, chunk) pair a tile); ``G > 1`` is list-major: a list that several queries of the batch
probe is read once per ``G`` of them (``G`` chosen per batch by the measured cost of a tile,
:func:`~jaxparadigm.retrieval.dense.ivf_plan.tile_queries`; batch 1 is always ``G = 1``). A jitted
``lax.scan`` scores a few tiles a step (one gather, one batched matrix product); on CPU devices
a device's tiles are split over independent loops, one per core the device has, each with at
least :data:`~jaxparadigm.retrieval.dense.ivf_plan.MIN_TILES_PER_SCAN` tiles (XLA's CPU runtime
runs independent loops on separate threads, so one device scans on every core). ``lax.top_k``
keeps each (tile, query) place's best ``k``, each query's places are laid out in a
``[q, S * k]`` buffer and ``lax.top_k`` keeps the best ``k`` per device; the ``D`` results are
merged. Tile and slot counts are rounded up to one of 8 steps per power of two (at most 12.5%
padding) so that few shapes compile. A query whose probed lists hold fewer than ``k`` rows gets
ids ``-1`` with score ``-inf`` at the end of its row.

Scores and ties: the device keeps ``k + 8`` candidates per query and counts the scanned rows
that score within ``3e-5 ||q|| max ||x||`` (the float32 dot's error bound) of its ``k``-th
score; the host scores the candidates again in float64 (an elementwise product and a row sum,
so equal rows score equal) and keeps the best ``k``, ties to the lower row id, the scores
rounded to float32. When more rows tie near the ``k``-th place than were kept, that query's
probed lists are scored on the host instead. The scan is float32 whatever the ``dtype``.

**Batches on the host** (:mod:`~jaxparadigm.retrieval.dense.ivf_host_scan`). A batch of at most
``host_queries`` queries (its :data:`~.ivf_host_scan.HOST_QUERIES` by default) is not planned
into tiles: the host scans it list-major, each probed list read once and scored for all its
queries by one BLAS product, and rescores the same near-tie candidates in float64: the same ids
and scores. A batch of at most :data:`~.ivf_host_scan.HOST_PROBE_QUERIES` queries is probed on
the host too, one dot a (query, list) pair, so each of its queries gets the lists it gets alone
(:func:`~.ivf_host_scan.host_probe`); a larger one by the device's program. Either scan of a
batch uses that batch's probe. The host scan was as fast as the tiles or
faster at every batch measured on 2 CPU cores (1 to 1,024 queries, one or two devices,
``benchmarks/RESULTS.md``); it holds a batch's float32 scores (``4 q`` bytes per row a query
scans: 64 MB for 256 queries over 1/16 of 1M rows), hence the bound.
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Sequence

import chex
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from jaxparadigm.common.numbers import check_int
from jaxparadigm.errors import InputError, require_int
from jaxparadigm.retrieval.dense.ivf_host_scan import (
    HOST_PROBE_QUERIES,
    HOST_QUERIES,
    host_candidates,
    host_probe,
    list_positions,
    rescored,
)
from jaxparadigm.retrieval.dense.ivf_plan import (
    TilePlan,
    chunk_starts,
    count_tiles,
    lay_out_chunks,
    plan_tiles,
    scans_for,
    tile_queries,
    tiles_per_step,
)
from jaxparadigm.retrieval.dense.vector_search import TopK

__all__ = [
    "IVFSearcher",
    "DEFAULT_NPROBE_FRACTION",
    "DEFAULT_MIN_ROWS",
    "default_nprobe",
    "check_nprobe",
]

#: Share of the lists a search probes by default (:func:`default_nprobe`). Measured by
#: ``jaxparadigm bench ivf --full`` (benchmarks/RESULTS.md): on 1M clustered rows in
#: 1,024 lists, 1/32 of them gave recall@10 0.9635 and 1/16 0.9771.
DEFAULT_NPROBE_FRACTION = 1 / 16

#: Rows a search scans at least by default (on average: ``DEFAULT_MIN_ROWS * lists / rows``
#: lists). Real text clusters less than generated rows: on the pydoc topics (2,308 MiniLM
#: passages, 58 lists) 1/16 of the lists gave recall@10 0.84; 12 lists (about 480 rows) 0.96.
DEFAULT_MIN_ROWS = 1024


def default_nprobe(lists: int, rows: int) -> int:
    """``max(ceil(lists * DEFAULT_NPROBE_FRACTION), ceil(DEFAULT_MIN_ROWS * lists / rows))``,
    at least 1 and at most ``lists``: a share of the lists, and on a small index enough lists
    to hold ``DEFAULT_MIN_ROWS`` rows."""
    share = -(-lists // round(1 / DEFAULT_NPROBE_FRACTION))
    small = -(-DEFAULT_MIN_ROWS * lists // max(rows, 1))
    return max(1, min(lists, max(share, small)))


def _default_scans(devices: Sequence[jax.Device]) -> int:
    """Independent scans per device: on CPU devices, this process's usable cores shared among
    the devices (at least 1); elsewhere 1."""
    if devices[0].platform != "cpu":
        return 1
    affinity = getattr(os, "sched_getaffinity", None)
    cores = len(affinity(0)) if affinity is not None else os.cpu_count() or 1
    return max(1, cores // len(devices))


def _max_norm(rows: np.ndarray) -> np.float32:
    """``max ||x||`` over ``rows`` (0 for none), read 65,536 rows at a time."""
    norms = [
        float(np.max(np.linalg.norm(rows[a : a + 65536], axis=1), initial=0.0))
        for a in range(0, len(rows), 65536)
    ]
    return np.float32(max(norms, default=0.0))


def _chunk_rows(count: int, lists: int) -> int:
    """A power of two near a quarter of the mean list size, in [16, 256]."""
    mean = max(count // max(lists, 1), 1)
    c = 16
    while c < 256 and c * 4 < mean:
        c *= 2
    return c


@functools.lru_cache(maxsize=16)
def _probe(mesh: Mesh):
    """Jitted ``(queries, centroids, half, nprobe) -> lists [q, nprobe]``, ``half = ||C_j||^2 /
    2`` given (the host's, computed once: in the program it was a second read of the centroids,
    ~70 us a call timed alone), the arrays replicated over ``mesh``: a host array goes in as it
    is (jit's own transfer, ~15 us, where a ``jax.device_put`` of it first costs ~150 us a call)."""
    rep = NamedSharding(mesh, PartitionSpec())

    @functools.partial(jax.jit, static_argnames="nprobe", in_shardings=(rep, rep, rep))
    def probe(queries: jax.Array, centroids: jax.Array, half: jax.Array, nprobe: int):
        _, lists = jax.lax.top_k(queries @ centroids.T - half[None, :], nprobe)
        return lists

    return probe


_SPARE = 8  # candidates kept beyond k: near ties at the k-th place are settled on the host
_TIE = 3e-5  # a near tie: within _TIE * ||q|| * max ||x|| (float32 dot error over d <= 1,024)


def _tile_scores(chunks: jax.Array, queries: jax.Array, tq: jax.Array, tc: jax.Array):
    """``[B, C, G]``: ``chunks[tc[t]] @ queries[tq[t]].T`` for each tile ``t``, one ``lax.scan``
    of ``tiles_per_step(G)`` tiles a step (one gather of the chunks, one batched product)."""
    group = tq.shape[1]
    per_step = tiles_per_step(group)

    def body(_, j):
        at = j * per_step
        rows = chunks[jax.lax.dynamic_slice_in_dim(tc, at, per_step)]  # [t, C, d]
        who = jax.lax.dynamic_slice_in_dim(tq, at, per_step)
        qs = queries[jnp.minimum(who, queries.shape[0] - 1)]  # [t, G, d]
        return None, jnp.einsum("tcd,tgd->tcg", rows, qs)

    _, s = jax.lax.scan(body, None, jnp.arange(tc.shape[0] // per_step))
    return s.reshape(tc.shape[0], chunks.shape[1], group)


@functools.lru_cache(maxsize=64)
def _scan(mesh: Mesh, k_dev: int, k: int, kth_at: int, group: int, scans: int):
    """Jitted ``(chunks, chunk_ids, queries, tol, tile_query, tile_chunk, slots) -> (scores, ids,
    at_least)`` over ``mesh`` (module docstring, "Layout"; the plan: ``ivf_plan.TilePlan``).
    Device ``d`` scores its ``B`` tiles (:func:`_tile_scores`) in ``scans`` independent loops of
    ``B / scans`` tiles (XLA's CPU runtime runs independent loops on separate threads), keeps
    each (tile, query) place's best ``min(k_dev, C)``, lays each query's places out as ``slots
    [q, S]`` (``B * G``: a row of ``-inf``) and keeps the best ``k_dev`` of them (``k_dev <= S *
    min(k_dev, C)``); the ``D`` per-device results are merged into the best ``k <= D * k_dev``.
    ``at_least``: how many scanned rows of all devices score at least the merged ``kth_at``-th
    score minus the query's ``tol`` (a near tie there, module docstring)."""

    def local(chunks, chunk_ids, queries, tol, tq, tc, slots):
        b, c, q = tc.shape[0], chunks.shape[1], queries.shape[0]
        run = b // scans  # independent scans: XLA runs them on several threads
        s = jnp.concatenate(
            [
                _tile_scores(chunks, queries, tq[i : i + run], tc[i : i + run])
                for i in range(0, b, run)
            ]
        )
        s = jnp.swapaxes(s, 1, 2)  # [B, G, C]
        ids = jnp.broadcast_to(chunk_ids[tc][:, None, :], (b, group, c)).reshape(-1, c)
        pq = tq.reshape(-1)  # the query of each place (q: empty)
        live = (ids >= 0) & (pq < q)[:, None]
        s = jnp.where(live, s.reshape(-1, c), -jnp.inf)  # [B * G, C]
        kc = min(k_dev, c)
        pv, ppos = jax.lax.top_k(s, kc)  # each place's best kc rows
        pid = jnp.take_along_axis(ids, ppos, axis=1)
        pv = jnp.concatenate([pv, jnp.full((1, kc), -jnp.inf, pv.dtype)])  # row B * G: padding
        pid = jnp.concatenate([pid, jnp.full((1, kc), -1, pid.dtype)])
        buf, idb = pv[slots].reshape(q, -1), pid[slots].reshape(q, -1)  # [q, S * kc]
        v, pos = jax.lax.top_k(buf, k_dev)
        everyone = jax.lax.all_gather(v, "lists", axis=1, tiled=True)  # [q, D * k]
        kth = jax.lax.top_k(everyone, kth_at)[0][:, -1] - tol
        mine = jnp.minimum(pq, q - 1)
        ge = jnp.sum(live & (s >= kth[mine][:, None]), axis=1)  # every scanned row, kept or not
        at_least = jax.lax.psum(jax.ops.segment_sum(ge, mine, num_segments=q), "lists")
        return v[None], jnp.take_along_axis(idb, pos, axis=1)[None], at_least[None]

    spec, rep = PartitionSpec("lists"), PartitionSpec()
    sharded = jax.shard_map(
        local,
        mesh=mesh,
        in_specs=(spec, spec, rep, rep, spec, spec, spec),
        out_specs=(spec, spec, spec),
        check_vma=False,
    )

    across, same = NamedSharding(mesh, spec), NamedSharding(mesh, rep)

    @functools.partial(jax.jit, in_shardings=(across, across, same, same, across, across, across))
    def run(chunks, chunk_ids, queries, tol, tq, tc, slots):
        v, i, at_least = sharded(chunks, chunk_ids, queries, tol, tq, tc, slots)  # [D, q, k]
        q = queries.shape[0]
        v = jnp.transpose(v, (1, 0, 2)).reshape(q, -1)
        i = jnp.transpose(i, (1, 0, 2)).reshape(q, -1)
        best, pos = jax.lax.top_k(v, k)
        return best, jnp.take_along_axis(i, pos, axis=1), at_least[0]

    return run


class IVFSearcher:
    """Inverted lists (``centroids [L, d]``, ``offsets [L + 1]``, ``ids [n]``, ``rows [n, d]``)
    placed on ``devices`` for ``search(queries, k, nprobe)`` (module docstring).

    On ``D`` devices the lists are split into ``D`` runs of about ``n / D`` rows (list order);
    device ``d`` holds the chunks of its run and scores the probed chunks it holds, so ``D``
    CPU devices scan on ``D`` threads. ``tile_queries``: the queries a tile scores (``G`` of the
    module docstring; None: chosen per batch). ``scans``: independent scans per device (None: on
    CPU devices the usable cores shared among the devices). Every ``G`` and ``scans`` gives the
    same results.
    """

    def __init__(
        self,
        centroids: np.ndarray,
        offsets: np.ndarray,
        ids: np.ndarray,
        rows: np.ndarray,
        *,
        devices: Sequence[jax.Device] | None = None,
        chunk_rows: int | None = None,
        tile_queries: int | None = None,
        scans: int | None = None,
        host_queries: int = HOST_QUERIES,
    ) -> None:
        lists, dim = centroids.shape
        chex.assert_shape(offsets, (lists + 1,))
        chex.assert_shape(rows, (ids.shape[0], dim))
        self.lists, self.dim, self.rows = lists, dim, int(ids.shape[0])
        self.offsets = np.asarray(offsets, np.int64)
        c = _chunk_rows(self.rows, lists) if chunk_rows is None else chunk_rows
        c = require_int("chunk_rows", c, 1)
        self.chunk_rows = c
        if tile_queries is not None:
            require_int("tile_queries", tile_queries, 1)
        self.group = tile_queries
        if scans is not None:
            require_int("scans", scans, 1)
        self.host_queries = require_int("host_queries", host_queries, 0)
        self.devices = list(jax.devices()[:1] if devices is None else devices)
        if not self.devices:
            raise InputError("devices: got an empty list, expected at least one device")
        n_dev = len(self.devices)
        self.scans = scans if scans is not None else _default_scans(self.devices)
        self.mesh = Mesh(np.array(self.devices), ("lists",))
        sizes = np.diff(self.offsets)
        per_list = -(-sizes // c)  # chunks of each list
        # list j goes to device floor(D * rows before j / n): runs of about n / D rows
        self.device_of = np.minimum(n_dev * self.offsets[:-1] // max(self.rows, 1), n_dev - 1)
        self.chunks_per_list = per_list
        self.first_chunk, width = chunk_starts(per_list, self.device_of, n_dev)
        self.empty_chunk = width - 1  # each device's last chunk is all padding
        self._sharded = NamedSharding(self.mesh, PartitionSpec("lists"))
        self._placed: tuple[jax.Array, jax.Array] | None = None  # placed_chunks()
        self._place_lock = threading.Lock()
        self._replicated = NamedSharding(self.mesh, PartitionSpec())
        host_c = np.ascontiguousarray(centroids, np.float32)
        self.centroids = jax.device_put(host_c, self._replicated)
        # the host probe's copy (ivf_host_scan.host_probe); both probes' ||C_j||^2 / 2
        self._host_centroids, self._half = host_c, np.float32(0.5) * np.sum(host_c * host_c, 1)
        self._device_half = jax.device_put(self._half, self._replicated)
        # a plain view: a memmap's slice costs ~4 us more (a memmap object per list read)
        self._rows, self._ids = np.asarray(rows), np.asarray(ids)
        self._pos = np.empty(self.rows, np.int64)  # the position of each row id
        self._pos[self._ids] = np.arange(self.rows)
        self._row_norm = _max_norm(rows)

    def placed_chunks(self) -> tuple[jax.Array, jax.Array]:
        """``(chunks [D * W, C, d], chunk_ids [D * W, C])`` on the devices ("Layout"), placed by
        the first device scan: a searcher of host scans only never holds this copy of the rows
        (placed in the background, it slowed the first host scans 2-3x while it ran)."""
        with self._place_lock:
            if self._placed is None:
                c, lists = self.chunk_rows, (self.offsets, self.chunks_per_list, self.device_of)
                data, ids, _ = lay_out_chunks(self._rows, self._ids, *lists, len(self.devices), c)
                self._placed = (
                    jax.device_put(data.reshape(-1, c, self.dim), self._sharded),
                    jax.device_put(ids.reshape(-1, c), self._sharded),
                )
            return self._placed

    def probe(self, queries: np.ndarray, nprobe: int) -> np.ndarray:
        """The ``nprobe`` lists each query scans, nearest first, ties to the lower list: int
        ``[q, nprobe]``; the host's probe for a batch of at most ``HOST_PROBE_QUERIES``, else
        the device's (module docstring)."""
        queries = np.asarray(queries, np.float32)
        if len(queries) <= HOST_PROBE_QUERIES:
            return host_probe(queries, self._host_centroids, self._half, nprobe)
        return np.asarray(_probe(self.mesh)(queries, self.centroids, self._device_half, nprobe))

    def tie_bound(self, queries: np.ndarray) -> np.ndarray:
        """Each query's near-tie bound ``3e-5 ||q|| max ||x||`` (module docstring): float32 [q]."""
        return _TIE * np.linalg.norm(queries, axis=1).astype(np.float32) * self._row_norm

    def plan(self, probed: np.ndarray, group: int = 1, scans: int = 1) -> TilePlan:
        """The :class:`~jaxparadigm.retrieval.dense.ivf_plan.TilePlan` of the lists ``probed``
        ``[q, nprobe]`` with ``group`` queries a tile, on the devices holding the lists, for
        ``scans`` loops a device."""
        return plan_tiles(
            probed,
            group,
            chunks_per_list=self.chunks_per_list,
            first_chunk=self.first_chunk,
            device_of=self.device_of,
            devices=len(self.devices),
            empty_chunk=self.empty_chunk,
            scans=scans,
        )

    def tile_queries(self, probed: np.ndarray) -> int:
        """The queries a tile scores for the lists ``probed``: this searcher's ``tile_queries``,
        or the cheapest by :func:`~jaxparadigm.retrieval.dense.ivf_plan.tile_queries`."""
        if self.group is not None:
            return self.group
        return tile_queries(probed, self.chunks_per_list)

    def search(self, queries: np.ndarray, k: int, nprobe: int) -> TopK:
        """Top ``k`` rows of each query's ``nprobe`` nearest lists, best first, ties to the lower
        row (``-1``/``-inf`` where the lists hold fewer than ``k`` rows)."""
        nprobe = require_int("nprobe", nprobe, 1, self.lists)
        k = require_int("k", k, 1)
        queries = np.ascontiguousarray(queries, np.float32)
        chex.assert_shape(queries, (None, self.dim))
        tol = self.tie_bound(queries)
        probed = self.probe(queries, nprobe)
        if len(queries) <= self.host_queries:  # the host scans
            cands = host_candidates(queries, self._rows, self.offsets, probed, k, tol)
            return rescored(queries, self._rows, self._ids, k, cands)
        group = self.tile_queries(probed)
        n_tiles = count_tiles(probed, group, self.chunks_per_list)
        scans = scans_for(n_tiles, len(self.devices), self.scans)
        tiles = self.plan(probed, group, scans)
        # each place keeps its best min(want, C) rows, a device its best k_dev of them, the merge
        # kk: fewer than k only where the probed lists hold fewer rows (then padded below)
        want = k + _SPARE
        k_dev = min(want, tiles.slots.shape[1] * min(want, self.chunk_rows))
        kk = min(want, len(self.devices) * k_dev)
        run = _scan(self.mesh, k_dev, kk, min(k, kk), group, scans)
        # host arrays go in as they are: jit places them by its in_shardings
        args = (queries, tol, tiles.tile_query, tiles.tile_chunk, tiles.slots)
        _, ids, at_least = jax.device_get(run(*self.placed_chunks(), *args))
        cands = []
        for i in range(len(queries)):
            if at_least[i] > kk:  # more near ties at the k-th place than were kept: every row
                cands.append(list_positions(self.offsets, probed[i]))
            else:
                cands.append(self._pos[ids[i][ids[i] >= 0]])
        return rescored(queries, self._rows, self._ids, k, cands)


def check_nprobe(nprobe: object, lists: int, where: str) -> int:
    """``nprobe`` if an int in ``[1, lists]``; else :class:`InputError` naming ``where``."""
    try:
        return check_int("nprobe", nprobe, 1, lists)
    except InputError as exc:
        raise InputError(f"{exc} (the lists of {where})") from None
