"""Exact top-k over a sharded corpus: jitted blocked matmul, a maximum per row group, merged (C1.1).

For unit queries ``Q [q, d]`` and rows ``X [n, d]`` the score is ``s[i, r] = Q_i . X_r`` (the
cosine, C1.2). Rows are scanned in blocks ``X_j`` (``block_rows``, halved for large query
batches so the ``[q, rows]`` score block stays in cache); each block keeps only the maximum of
every group of 8 consecutive rows, ``M[i, c] = max_{r in c} s[i, r]``, then

    groups_i = sorted(top_k(M_i, k)),   top_k_i = top_k(s[i, rows of groups_i], k)

so working memory is one score block plus ``M`` (``n / 8`` per query), never ``[q, n]``, and the
full ``lax.top_k`` runs once over ``M`` instead of once per block (see :func:`_placement_search` for
why this is exact). Ties go to the lower row id whatever the block size or device count. On ``D``
devices a *placement* of ``D * R`` rows is laid out with ``NamedSharding(mesh, P("rows"))`` (device
``i`` holds rows ``[i R, (i+1) R)``); each device scans its rows under ``shard_map`` and the ``D``
per-device top-k are merged in device (= row) order. A corpus larger than memory is searched as a
stream of placements (:class:`VectorSearcher` with ``resident=False``).

Search dtypes: ``float32`` (exact); ``bfloat16`` (rows stored as bfloat16, widened exactly to
float32 per block by a 16-bit shift, :func:`bfloat16_bits_to_float32`, then a float32 matmul);
``int8`` (per-row symmetric ``X_r ~= scale_r c_r`` with ``c_r = round(127 X_r / max|X_r|)``, scored
as ``scale_r (Q . c_r)``). A compact dtype returns ``k * rescore_factor`` candidates that
:func:`rescore` scores again in float32 from the float32 rows. ``approx=True`` uses
``lax.approx_max_k(recall_target)`` to pick the groups; XLA:CPU lowers it to the exact TopK (same
result, no speed-up), other backends may trade recall for speed.
"""

from __future__ import annotations

import functools
import math
import threading
from collections.abc import Iterable, Sequence
from typing import NamedTuple

import chex
import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from jaxparadigm.common.numbers import check_int
from jaxparadigm.errors import InputError, require_int
from jaxparadigm.retrieval.search_options import SEARCH_DTYPES

__all__ = [
    "SEARCH_DTYPES",
    "TopK",
    "RowSource",
    "compact_rows",
    "VectorSearcher",
    "rescore",
    "merge_topk",
    "bfloat16_bits_to_float32",
]

_MAX_ROWS = 2**31 - 1  # row ids are int32 on device


class TopK(NamedTuple):
    """Best-first ``scores`` float32 ``[q, k]`` and their corpus row ``ids`` int64 ``[q, k]``."""

    scores: np.ndarray
    ids: np.ndarray


class RowSource:
    """Rows ``[start, stop)`` of a corpus stored as consecutive 2-D float32 shards (memmaps)."""

    def __init__(self, shards: Sequence[np.ndarray]) -> None:
        if not shards:
            raise InputError("shards: got none, expected at least one [rows, dim] array")
        dims = {s.shape[1] for s in shards if s.ndim == 2}
        if len(dims) != 1 or any(s.ndim != 2 or s.dtype != np.float32 for s in shards):
            raise InputError(
                f"shards: got {[(s.dtype, s.shape) for s in shards]}, expected float32 "
                "[rows, dim] arrays of one dim"
            )
        self.shards = list(shards)
        self.dim = dims.pop()
        self.bounds = np.cumsum([0] + [s.shape[0] for s in shards])
        self.rows = int(self.bounds[-1])
        if self.rows > _MAX_ROWS:
            raise InputError(f"corpus: {self.rows} rows, at most {_MAX_ROWS} are supported")

    def take(self, start: int, stop: int, rows: int | None = None) -> np.ndarray:
        """float32 ``[rows, dim]`` holding rows ``[start, stop)`` then zeros (``rows`` defaults to
        ``stop - start``): one allocation, filled from the shards."""
        out = np.zeros((stop - start if rows is None else rows, self.dim), np.float32)
        first = int(np.searchsorted(self.bounds, start, side="right")) - 1
        at = start
        for j in range(max(first, 0), len(self.shards)):
            if at >= stop:
                break
            lo, hi = self.bounds[j], self.bounds[j + 1]
            out[at - start : min(stop, hi) - start] = self.shards[j][at - lo : min(stop, hi) - lo]
            at = min(stop, hi)
        return out

    def gather(self, ids: np.ndarray) -> np.ndarray:
        """float32 ``[*ids.shape, dim]``: the rows ``ids`` (any shape, values in ``[0, rows)``)."""
        flat = ids.reshape(-1)
        out = np.empty((flat.size, self.dim), np.float32)
        shard = np.searchsorted(self.bounds, flat, side="right") - 1
        for j in np.unique(shard):
            sel = shard == j
            out[sel] = self.shards[j][flat[sel] - self.bounds[j]]
        return out.reshape(*ids.shape, self.dim)


def compact_rows(x: np.ndarray, dtype: str) -> tuple[np.ndarray, np.ndarray | None]:
    """``x`` in the search ``dtype``: ``(rows, None)``, or ``(int8 codes, float32 scale)`` for int8.

    int8: ``scale_r = max_j |x_rj| / 127`` (1 for an all-zero row), ``codes = round(x / scale)``.
    """
    if dtype == "float32":
        return np.ascontiguousarray(x, np.float32), None
    if dtype == "bfloat16":
        return x.astype(ml_dtypes.bfloat16), None
    if dtype == "int8":
        peak = np.max(np.abs(x), axis=1)
        scale = np.where(peak > 0, peak / 127.0, 1.0).astype(np.float32)
        codes = np.clip(np.rint(x / scale[:, None]), -127, 127).astype(np.int8)
        return codes, scale
    raise InputError(f"dtype: got {dtype!r}, expected one of {', '.join(SEARCH_DTYPES)}")


def merge_topk(scores: jax.Array, ids: jax.Array, k: int) -> tuple[jax.Array, jax.Array]:
    """Top ``k`` of ``[q, m]`` candidates (``m >= k``), ties to the earlier column."""
    best, pos = jax.lax.top_k(scores, k)
    return best, jnp.take_along_axis(ids, pos, axis=1)


def bfloat16_bits_to_float32(bits: jax.Array) -> jax.Array:
    """bfloat16 values stored as their uint16 bits -> float32, exactly: ``bitcast(bits << 16)``.

    The same numbers as ``astype(float32)``, but an integer shift that XLA:CPU vectorises: on the
    AVX2 machine of benchmarks/RESULTS.md its bfloat16 convert (and bf16 x bf16 dot) scanned
    one query at 0.3-0.4 queries/s per 1M rows, this path at 5.9 (float32: 4.1). With jax 0.10 on
    the AVX-512 EPYC the convert (``bitcast`` to bfloat16, ``astype``) is no faster than the
    shift: 218.5 vs 222.6 q/s at 64 queries, 34.1 vs 33.7 at one, 1M x 384, 4 interleaved rounds
    of ``benchmarks/search_dtype_probe.py``, which times both.
    """
    return jax.lax.bitcast_convert_type(bits.astype(jnp.uint32) << 16, jnp.float32)


def _as_float32(rows: jax.Array) -> jax.Array:
    """Stored rows (float32, int8 codes, or bfloat16 as uint16 bits) as float32 values; int8
    codes still need their per-row scale."""
    if rows.dtype == jnp.int8:
        return rows.astype(jnp.float32)
    if rows.dtype == jnp.uint16:  # bfloat16 bits
        return bfloat16_bits_to_float32(rows)
    return rows


def _block_scores(queries: jax.Array, block: jax.Array, scale: jax.Array | None) -> jax.Array:
    s = jnp.dot(queries, _as_float32(block).T)
    if block.dtype == jnp.int8:
        assert scale is not None  # int8 blocks always come with their per-row scales
        s = s * scale[None, :]
    return s


_GROUP = 8  # rows per group: stage 1 keeps one maximum per group (see _placement_search)
_SCORE_BLOCK = 262144  # target score-block elements (q * rows, 1 MB): the dot's output stays in L2


def _scan_rows(block_rows: int, q: int) -> int:
    """Rows scanned per step for ``q`` queries: ``block_rows`` halved while the score block
    ``q * rows`` exceeds ``_SCORE_BLOCK`` (8,192 rows for up to 32 queries, 4,096 for 64) and the
    rows stay a multiple of ``_GROUP``; always a divisor of ``block_rows``."""
    rows = block_rows
    while rows % (2 * _GROUP) == 0 and q * rows > _SCORE_BLOCK:
        rows //= 2
    return rows


@functools.lru_cache(maxsize=64)
def _placement_search(
    mesh: Mesh, k: int, block_rows: int, approx: bool, recall_target: float, has_scale: bool
):
    """Jitted ``(data, scale, queries, start, valid) -> (scores, ids)`` for one placement.

    Exact top-``k`` in three stages per device, so that the full ``lax.top_k`` runs once over a
    ``g``-fold smaller array instead of once per block (on XLA:CPU a ``top_k`` per ``[64, 1024]``
    block cost more than the block's matmul):

    1. scan the rows in blocks ``X_j``: ``S_j = Q X_j^T``, keep ``M[i, c] = max_{r in group c}
       S[i, r]`` for groups of ``g`` consecutive rows;
    2. ``top_k(M_i, k)``: the ``k`` best groups of each query (``approx_max_k`` with ``approx``),
       sorted back into row order;
    3. score the ``k g`` rows of those groups again and ``top_k`` them, ties to the lower row.

    Exact: with ``t`` the ``k``-th best score, every row scoring ``> t`` lies in a group whose
    maximum is ``> t`` (fewer than ``k`` such groups, all selected), and the lowest-numbered
    rows scoring ``t`` lie in the lowest-numbered groups of maximum ``t``, which ``top_k``
    selects first on ties; stage 3 then sees every row of the true top ``k``.
    """

    def local(data, scale, queries, start, valid):
        rows, q = data.shape[0], queries.shape[0]  # R: this device's rows
        step = _scan_rows(block_rows, q)
        g = math.gcd(step, _GROUP)
        dev_first = jax.lax.axis_index("rows") * rows
        blocks = data.reshape(rows // step, step, data.shape[1])
        scales = scale.reshape(rows // step, step) if has_scale else None

        def body(_, j):
            s = _block_scores(queries, blocks[j], scales[j] if scales is not None else None)
            row = dev_first + j * step + jnp.arange(step, dtype=jnp.int32)
            s = jnp.where(row < valid, s, -jnp.inf)
            return None, jnp.max(s.reshape(q, step // g, g), axis=2)

        _, group_max = jax.lax.scan(body, None, jnp.arange(rows // step))
        group_max = jnp.transpose(group_max, (1, 0, 2)).reshape(q, rows // g)
        kg = min(k, rows // g)
        if approx:
            _, best = jax.lax.approx_max_k(group_max, kg, recall_target=recall_target)
        else:
            _, best = jax.lax.top_k(group_max, kg)
        best = jnp.sort(best, axis=1)  # row order, so that ties go to the lower row
        local_row = (best[:, :, None] * g + jnp.arange(g, dtype=jnp.int32)).reshape(q, kg * g)
        cand = data[local_row]  # [q, kg * g, dim]
        s = jnp.einsum("qd,qcd->qc", queries, _as_float32(cand))
        if cand.dtype == jnp.int8:
            s = s * scale[local_row]
        row = dev_first + local_row
        s = jnp.where(row < valid, s, -jnp.inf)
        v, pos = jax.lax.top_k(s, min(k, kg * g))
        i = start + jnp.take_along_axis(row, pos, axis=1)
        if v.shape[1] < k:  # fewer rows than k on this device: pad with nothing-found
            pad = k - v.shape[1]
            v = jnp.pad(v, ((0, 0), (0, pad)), constant_values=-jnp.inf)
            i = jnp.pad(i, ((0, 0), (0, pad)), constant_values=-1)
        return v[None], i[None]

    spec = PartitionSpec("rows")
    sharded = jax.shard_map(
        local,
        mesh=mesh,
        in_specs=(spec, spec if has_scale else PartitionSpec(), *(PartitionSpec(),) * 3),
        out_specs=(spec, spec),
        check_vma=False,
    )

    @jax.jit
    def run(data, scale, queries, start, valid):
        v, i = sharded(data, scale, queries, start, valid)  # [D, q, k], device = row order
        q = queries.shape[0]
        v = jnp.transpose(v, (1, 0, 2)).reshape(q, -1)
        i = jnp.transpose(i, (1, 0, 2)).reshape(q, -1)
        return merge_topk(v, i, k)

    return run


class _Placement(NamedTuple):
    data: jax.Array  # [D * R, dim] in the search dtype, NamedSharding(mesh, P("rows"))
    scale: jax.Array  # [D * R] float32 (int8) or a replicated scalar
    start: int  # corpus row of data[0]
    valid: int  # real rows (the rest is padding)


class VectorSearcher:
    """Streaming exact (or compact-dtype) top-k over a :class:`RowSource` on ``devices`` (C1.1).

    ``resident=True`` places the whole corpus once, at the first search (memory: the corpus in
    ``dtype``); ``resident=False`` re-reads it as placements of ``len(devices) * rows_per_device``
    rows per search (memory: one placement). ``search(queries, k)`` returns a :class:`TopK`.
    """

    def __init__(
        self,
        source: RowSource,
        *,
        dtype: str = "float32",
        devices: Sequence[jax.Device] | None = None,
        block_rows: int = 8192,
        resident: bool = True,
        rows_per_device: int | None = None,
    ) -> None:
        if dtype not in SEARCH_DTYPES:
            raise InputError(f"dtype: got {dtype!r}, expected one of {', '.join(SEARCH_DTYPES)}")
        block_rows = check_int("block_rows", block_rows, 8)
        devices = list(jax.devices() if devices is None else devices)
        if not devices:
            raise InputError("devices: got an empty list, expected at least one device")
        self.source, self.dtype, self.devices = source, dtype, devices
        self.mesh = Mesh(np.array(devices), ("rows",))
        per_device = -(-source.rows // len(devices))
        self.block_rows = min(block_rows, _round_up(per_device, 8))
        if rows_per_device is None:
            rows_per_device = per_device if resident else 16 * block_rows
        self.rows_per_device = _round_up(max(rows_per_device, 1), self.block_rows)
        self.resident = resident
        self._placements: list[_Placement] | None = None  # resident: made by the first search
        self._lock = threading.Lock()

    @property
    def bytes_per_row(self) -> int:
        """Bytes one corpus row occupies in the search dtype (int8 includes its float32 scale)."""
        codes = {"float32": 4, "bfloat16": 2, "int8": 1}[self.dtype] * self.source.dim
        return codes + (4 if self.dtype == "int8" else 0)

    def _place(self, start: int) -> _Placement:
        rows, d = self.rows_per_device, self.source.dim
        datas, scales = [], []
        for i, device in enumerate(self.devices):
            lo = min(start + i * rows, self.source.rows)
            hi = min(lo + rows, self.source.rows)
            # padding rows are zeros (int8: scale 1); they are masked out of every top-k
            codes, scale = compact_rows(self.source.take(lo, hi, rows), self.dtype)
            if codes.dtype == ml_dtypes.bfloat16:
                codes = codes.view(np.uint16)  # decoded in the kernel by a shift
            datas.append(jax.device_put(codes, device))
            if scale is not None:
                scales.append(jax.device_put(scale, device))
        sharding = NamedSharding(self.mesh, PartitionSpec("rows"))
        data = jax.make_array_from_single_device_arrays(
            (len(self.devices) * rows, d), sharding, datas
        )
        if scales:
            scale_data = jax.make_array_from_single_device_arrays(
                (len(self.devices) * rows,), sharding, scales
            )
        else:
            scale_data = jax.device_put(
                jnp.zeros((), jnp.float32), NamedSharding(self.mesh, PartitionSpec())
            )
        valid = min(len(self.devices) * rows, self.source.rows - start)
        return _Placement(data, scale_data, start, valid)

    def _place_all(self):
        step = len(self.devices) * self.rows_per_device
        for start in range(0, self.source.rows, step):
            yield self._place(start)

    def search(
        self,
        queries: np.ndarray,
        k: int,
        *,
        approx: bool = False,
        recall_target: float = 0.95,
        rescore_factor: int = 4,
    ) -> TopK:
        """Top ``k`` rows for each query row (float32 ``[q, dim]``): :class:`TopK` best first;
        with a compact dtype, ``k * rescore_factor`` candidates are rescored in float32."""
        queries = np.asarray(queries, np.float32)
        chex.assert_rank(queries, 2)
        if queries.shape[1] != self.source.dim:
            raise InputError(f"queries: got shape {queries.shape}, expected (n, {self.source.dim})")
        k = require_int("k", k, 1)
        rescore_factor = require_int("rescore_factor", rescore_factor, 1)
        if not 0.0 < recall_target <= 1.0:
            raise InputError(f"recall_target: got {recall_target!r}, expected a float in (0, 1]")
        k = min(k, self.source.rows)
        wide = k if self.dtype == "float32" else min(k * rescore_factor, self.source.rows)
        fn = _placement_search(
            self.mesh, wide, self.block_rows, approx, float(recall_target), self.dtype == "int8"
        )
        replicated = NamedSharding(self.mesh, PartitionSpec())
        q = jax.device_put(queries, replicated)
        best: tuple[jax.Array, jax.Array] | None = None
        placements: Iterable[_Placement] = self._place_all()  # a generator: none placed yet
        if self.resident:
            with self._lock:  # the whole corpus, placed by the first search
                if self._placements is None:
                    self._placements = list(placements)
                placements = self._placements
        for p in placements:
            v, i = fn(p.data, p.scale, q, np.int32(p.start), np.int32(p.valid))
            if best is not None:
                v, i = merge_topk(
                    jnp.concatenate([best[0], v], 1), jnp.concatenate([best[1], i], 1), wide
                )
            best = (v, i)
        if best is None:  # no placement: the corpus has no rows
            raise InputError("corpus: got 0 rows, expected at least one row to search")
        scores, ids = np.asarray(best[0]), np.asarray(best[1]).astype(np.int64)
        if self.dtype == "float32":
            return TopK(scores, ids)
        return rescore(self.source, queries, ids, k)


def rescore(source: RowSource, queries: np.ndarray, candidates: np.ndarray, k: int) -> TopK:
    """Exact float32 scores of ``candidates`` ``[q, m]`` from ``source``; top ``k``, ties to lower
    id."""
    rows = source.gather(candidates)  # [q, m, dim]
    scores = np.einsum("qmd,qd->qm", rows, queries.astype(np.float32))
    order = np.lexsort((candidates, -scores), axis=1)[:, :k]
    return TopK(
        np.take_along_axis(scores, order, 1).astype(np.float32),
        np.take_along_axis(candidates, order, 1),
    )


def _round_up(n: int, m: int) -> int:
    return -(-n // m) * m
