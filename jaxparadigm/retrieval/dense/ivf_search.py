"""Search an index's inverted lists: probe the ``nprobe`` nearest lists, score their rows exactly (issue 38).

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
the host lists every (query, chunk) pair of the probed lists, on the device holding the chunk,
sorted by chunk (a chunk several queries probe is read once into cache); a jitted ``lax.scan``
scores ``8`` pairs a step (one gather, one batched dot), ``lax.top_k`` keeps each pair's best
``k``, each query's pairs are laid out in a ``[q, S * k]`` buffer and ``lax.top_k`` keeps the
best ``k`` per device; the ``D`` results are merged. Pair and slot counts are rounded up to one
of 8 steps per power of two (at most 12.5% padding) so that few shapes compile. A query whose probed lists hold fewer than ``k`` rows gets ids ``-1`` with score
``-inf`` at the end of its row.

Scores and ties: the device keeps ``k + 8`` candidates per query and counts the scanned rows
that score within ``3e-5 ||q|| max ||x||`` (the float32 dot's error bound) of its ``k``-th
score; the host scores the candidates again in float64 (an elementwise product and a row sum,
so equal rows score equal) and keeps the best ``k``, ties to the lower row id, the scores
rounded to float32. When more rows tie near the ``k``-th place than were kept, that query's
probed lists are scored on the host instead. The scan is float32 whatever the searcher's
``dtype``.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import chex
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from jaxparadigm.common.numbers import check_int
from jaxparadigm.errors import InputError, require_int
from jaxparadigm.retrieval.dense.vector_search import TopK

__all__ = [
    "IVFSearcher",
    "DEFAULT_NPROBE_FRACTION",
    "DEFAULT_MIN_ROWS",
    "default_nprobe",
    "check_nprobe",
]

#: Share of the lists a search probes by default (:func:`default_nprobe`). Measured by
#: ``jaxparadigm bench ivf --full`` (benchmarks/RESULTS.md, issue 38): on 1M clustered rows in
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


def _chunk_rows(count: int, lists: int) -> int:
    """A power of two near a quarter of the mean list size, in [16, 256]."""
    mean = max(count // max(lists, 1), 1)
    c = 16
    while c < 256 and c * 4 < mean:
        c *= 2
    return c


@functools.partial(jax.jit, static_argnames="nprobe")
def _probe(queries: jax.Array, centroids: jax.Array, nprobe: int) -> jax.Array:
    half = 0.5 * jnp.sum(centroids * centroids, axis=1)
    _, lists = jax.lax.top_k(queries @ centroids.T - half[None, :], nprobe)
    return lists


_GROUP = 8  # (query, chunk) pairs scored per scan step: one [8, C, d] gather, one batched dot
_SPARE = 8  # candidates kept beyond k: near ties at the k-th place are settled on the host
_TIE = 3e-5  # a near tie: within _TIE * ||q|| * max ||x|| (float32 dot error over d <= 1,024)


@functools.lru_cache(maxsize=64)
def _scan(mesh: Mesh, k_dev: int, k: int, kth_at: int):
    """Jitted ``(chunks, chunk_ids, queries, pair_query, pair_chunk, slots) -> (scores, ids,
    at_least)`` over the devices of ``mesh`` (module docstring, "Layout").

    Device ``d`` scores its ``B`` pairs (``pair_query[p] . chunks[pair_chunk[p]]``, ``_GROUP``
    pairs a step), keeps each pair's best ``min(k_dev, C)``, lays each query's pairs out as
    ``slots [q, S]`` (``B``: a row of ``-inf``) and keeps the best ``k_dev`` of them (``k_dev <=
    S * min(k_dev, C)``); the ``D`` per-device results are merged into the best ``k <= D *
    k_dev``. ``at_least``: how many scanned rows of all devices score at least the merged
    ``kth_at``-th score minus the query's ``tol`` (a near tie there, module docstring)."""

    def local(chunks, chunk_ids, queries, tol, pq, pc, slots):
        b, c = pq.shape[0], chunks.shape[1]

        def body(_, j):
            at = j * _GROUP
            rows = chunks[jax.lax.dynamic_slice_in_dim(pc, at, _GROUP)]  # [g, C, d]
            qs = queries[jax.lax.dynamic_slice_in_dim(pq, at, _GROUP)]  # [g, d]
            return None, jnp.einsum("gcd,gd->gc", rows, qs)

        _, s = jax.lax.scan(body, None, jnp.arange(b // _GROUP))
        ids = chunk_ids[pc]  # [B, C]
        s = jnp.where(ids >= 0, s.reshape(b, c), -jnp.inf)
        kc = min(k_dev, c)
        pv, ppos = jax.lax.top_k(s, kc)  # each pair's best kc rows
        pid = jnp.take_along_axis(ids, ppos, axis=1)
        pv = jnp.concatenate([pv, jnp.full((1, kc), -jnp.inf, pv.dtype)])  # row B: padding
        pid = jnp.concatenate([pid, jnp.full((1, kc), -1, pid.dtype)])
        q = queries.shape[0]
        buf, idb = pv[slots].reshape(q, -1), pid[slots].reshape(q, -1)  # [q, S * kc]
        v, pos = jax.lax.top_k(buf, k_dev)
        everyone = jax.lax.all_gather(v, "lists", axis=1, tiled=True)  # [q, D * k]
        kth = jax.lax.top_k(everyone, kth_at)[0][:, -1] - tol
        ge = jnp.sum(s >= kth[pq][:, None], axis=1)  # every scanned row, not only the kept ones
        at_least = jax.lax.psum(jax.ops.segment_sum(ge, pq, num_segments=q), "lists")
        return v[None], jnp.take_along_axis(idb, pos, axis=1)[None], at_least[None]

    spec, rep = PartitionSpec("lists"), PartitionSpec()
    sharded = jax.shard_map(
        local,
        mesh=mesh,
        in_specs=(spec, spec, rep, rep, spec, spec, spec),
        out_specs=(spec, spec, spec),
        check_vma=False,
    )

    @jax.jit
    def run(chunks, chunk_ids, queries, tol, pq, pc, slots):
        v, i, at_least = sharded(chunks, chunk_ids, queries, tol, pq, pc, slots)  # [D, q, k]
        q = queries.shape[0]
        v = jnp.transpose(v, (1, 0, 2)).reshape(q, -1)
        i = jnp.transpose(i, (1, 0, 2)).reshape(q, -1)
        best, pos = jax.lax.top_k(v, k)
        return best, jnp.take_along_axis(i, pos, axis=1), at_least[0]

    return run


def _pow2(n: int) -> int:
    """The least power of two >= ``n`` (1 for ``n <= 1``)."""
    return 1 << max(int(n) - 1, 0).bit_length()


def _bucket(n: int, least: int = 1) -> int:
    """``n`` rounded up to the next of 8 steps per octave (for ``2^m < n <= 2^(m+1)`` a multiple
    of ``2^m / 8``: under 12.5% padding), and to a multiple of ``least``: few shapes compile,
    little work is wasted."""
    step = max(_pow2(n) // 16, least)
    return max(-(-int(n) // step) * step, least)


class IVFSearcher:
    """Inverted lists (``centroids [L, d]``, ``offsets [L + 1]``, ``ids [n]``, ``rows [n, d]``)
    placed on ``devices`` for ``search(queries, k, nprobe)`` (module docstring).

    On ``D`` devices the lists are split into ``D`` runs of about ``n / D`` rows (list order);
    device ``d`` holds the chunks of its run and scores the probed chunks it holds, so ``D``
    CPU devices scan on ``D`` threads.
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
    ) -> None:
        lists, dim = centroids.shape
        chex.assert_shape(offsets, (lists + 1,))
        chex.assert_shape(rows, (ids.shape[0], dim))
        self.lists, self.dim, self.rows = lists, dim, int(ids.shape[0])
        self.offsets = np.asarray(offsets, np.int64)
        c = _chunk_rows(self.rows, lists) if chunk_rows is None else chunk_rows
        c = require_int("chunk_rows", c, 1)
        self.chunk_rows = c
        self.devices = list(jax.devices()[:1] if devices is None else devices)
        if not self.devices:
            raise InputError("devices: got an empty list, expected at least one device")
        n_dev = len(self.devices)
        self.mesh = Mesh(np.array(self.devices), ("lists",))
        sizes = np.diff(self.offsets)
        per_list = -(-sizes // c)  # chunks of each list
        # list j goes to device floor(D * rows before j / n): runs of about n / D rows
        self.device_of = np.minimum(n_dev * self.offsets[:-1] // max(self.rows, 1), n_dev - 1)
        self.first_chunk = np.zeros(lists, np.int64)  # a list's first chunk on its device
        self.chunks_per_list = per_list
        held = [int(per_list[self.device_of == d].sum()) for d in range(n_dev)]
        width = max(held) + 1  # chunks per device; the last one is all padding
        self.empty_chunk = width - 1
        data = np.zeros((n_dev, width, c, dim), np.float32)
        chunk_ids = np.full((n_dev, width, c), -1, np.int32)
        for d in range(n_dev):
            mine = np.flatnonzero(self.device_of == d)
            if not mine.size:
                continue
            first = np.concatenate([[0], np.cumsum(per_list[mine])[:-1]])
            self.first_chunk[mine] = first
            lo, hi = self.offsets[mine[0]], self.offsets[mine[-1] + 1]
            list_of = np.repeat(mine, sizes[mine])
            within = np.arange(lo, hi) - self.offsets[list_of]
            at = self.first_chunk[list_of] * c + within  # row slot on this device
            data[d].reshape(-1, dim)[at] = rows[lo:hi]
            chunk_ids[d].reshape(-1)[at] = ids[lo:hi]
        self._sharded = NamedSharding(self.mesh, PartitionSpec("lists"))
        self.chunks = jax.device_put(data.reshape(n_dev * width, c, dim), self._sharded)
        self.chunk_ids = jax.device_put(chunk_ids.reshape(n_dev * width, c), self._sharded)
        self._replicated = NamedSharding(self.mesh, PartitionSpec())
        self.centroids = jax.device_put(np.asarray(centroids, np.float32), self._replicated)
        self._rows, self._ids = rows, np.asarray(ids)
        self._pos = np.empty(self.rows, np.int64)  # the position of each row id
        self._pos[self._ids] = np.arange(self.rows)
        norms = [
            float(np.max(np.linalg.norm(rows[a : a + 65536], axis=1), initial=0.0))
            for a in range(0, self.rows, 65536)
        ]
        self._row_norm = np.float32(max(norms, default=0.0))

    def probe(self, queries: np.ndarray, nprobe: int) -> np.ndarray:
        """The ``nprobe`` lists each query scans, nearest first: int ``[q, nprobe]``."""
        q = jax.device_put(np.asarray(queries, np.float32), self._replicated)
        return np.asarray(_probe(q, self.centroids, nprobe))

    def plan(self, probed: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(pair_query [D*B], pair_chunk [D*B], slots [D*q, S])`` for the lists ``probed``
        ``[q, nprobe]``: every (query, chunk) pair of a probed list, on the device holding the
        chunk, sorted by chunk (queries sharing a chunk read it once from cache); ``B`` and
        ``S`` rounded up to powers of two (few shapes compile); padding scores nothing."""
        nq, n_dev = probed.shape[0], len(self.devices)
        flat = probed.reshape(-1)
        cnt = self.chunks_per_list[flat]
        query = np.repeat(np.repeat(np.arange(nq), probed.shape[1]), cnt)
        within = np.arange(int(cnt.sum())) - np.repeat(np.cumsum(cnt) - cnt, cnt)
        chunk = np.repeat(self.first_chunk[flat], cnt) + within
        device = np.repeat(self.device_of[flat], cnt)
        order = np.lexsort((query, chunk, device))
        query, chunk, device = query[order], chunk[order], device[order]
        per_dev = np.bincount(device, minlength=n_dev)
        b = _bucket(int(per_dev.max()), _GROUP)
        pos = np.arange(len(device)) - np.repeat(np.cumsum(per_dev) - per_dev, per_dev)
        key = device * nq + query  # (device, query) groups: slot = rank within the group
        per_key = np.bincount(key, minlength=n_dev * nq)
        by_key = np.argsort(key, kind="stable")
        slot = np.empty(len(key), np.int64)
        slot[by_key] = np.arange(len(key)) - np.repeat(np.cumsum(per_key) - per_key, per_key)
        width = _bucket(int(per_key.max()))
        pair_query = np.zeros((n_dev, b), np.int32)
        pair_chunk = np.full((n_dev, b), self.empty_chunk, np.int32)
        pair_query[device, pos], pair_chunk[device, pos] = query, chunk
        slots = np.full((n_dev, nq, width), b, np.int32)  # b: the row of -inf
        slots[device, query, slot] = pos
        return pair_query.reshape(-1), pair_chunk.reshape(-1), slots.reshape(n_dev * nq, width)

    def search(self, queries: np.ndarray, k: int, nprobe: int) -> TopK:
        """Top ``k`` rows of each query's ``nprobe`` nearest lists, best first, ties to the lower
        row (``-1``/``-inf`` where the lists hold fewer than ``k`` rows)."""
        nprobe = require_int("nprobe", nprobe, 1, self.lists)
        k = require_int("k", k, 1)
        queries = np.ascontiguousarray(queries, np.float32)
        chex.assert_shape(queries, (None, self.dim))
        probed = self.probe(queries, nprobe)
        pair_query, pair_chunk, slots = self.plan(probed)
        # each pair keeps its best min(want, C) rows, a device its best k_dev of them, the merge
        # kk: fewer than k only where the probed lists hold fewer rows (then padded below)
        want = k + _SPARE
        k_dev = min(want, slots.shape[1] * min(want, self.chunk_rows))
        kk = min(want, len(self.devices) * k_dev)
        run = _scan(self.mesh, k_dev, kk, min(k, kk))
        tol = _TIE * np.linalg.norm(queries, axis=1).astype(np.float32) * self._row_norm
        q, t = jax.device_put((queries, tol), self._replicated)
        plan = jax.device_put((pair_query, pair_chunk, slots), self._sharded)  # one call each
        _, ids, at_least = (np.asarray(a) for a in run(self.chunks, self.chunk_ids, q, t, *plan))
        out_s = np.full((len(queries), k), -np.inf, np.float32)
        out_i = np.full((len(queries), k), -1, np.int64)
        for i in range(len(queries)):
            if at_least[i] > kk:  # more near ties at the k-th place than were kept: every row
                cand = np.concatenate(
                    [np.arange(self.offsets[j], self.offsets[j + 1]) for j in probed[i]]
                )
            else:
                cand = self._pos[ids[i][ids[i] >= 0]]
            out_s[i], out_i[i] = self._rescore(queries[i], cand, k)
        return TopK(out_s, out_i)

    def _rescore(self, query: np.ndarray, pos: np.ndarray, k: int):
        """Best ``k`` of the rows at positions ``pos``: float64 ``x . q`` (one elementwise product
        and row sum, so equal rows score equal), ties to the lower row id, as float32."""
        pos = np.sort(pos)  # in file order
        ids = self._ids[pos]
        s = (np.asarray(self._rows[pos], np.float64) * query.astype(np.float64)).sum(1)
        order = np.lexsort((ids, -s))[:k]
        out_s = np.full(k, -np.inf, np.float32)
        out_i = np.full(k, -1, np.int64)
        out_s[: len(order)], out_i[: len(order)] = s[order], ids[order]
        return out_s, out_i


def check_nprobe(nprobe: object, lists: int, where: str) -> int:
    """``nprobe`` if an int in ``[1, lists]``; else :class:`InputError` naming ``where``."""
    try:
        return check_int("nprobe", nprobe, 1, lists)
    except InputError as exc:
        raise InputError(f"{exc} (the lists of {where})") from None
