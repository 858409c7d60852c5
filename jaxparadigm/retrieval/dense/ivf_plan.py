"""The work plan of an IVF batch: tiles of (one chunk, a group of the queries probing it) (C1.1).

A batch's queries each probe ``nprobe`` lists. The scan of
:mod:`~jaxparadigm.retrieval.dense.ivf_search` reads a list's rows chunk by chunk; a **tile** is
one chunk ``[C, d]`` and up to ``G`` of the queries that probe its list, scored as one matrix
product ``[C, d] x [d, G]``. ``G = 1`` is the row-major scan (one (query, chunk) pair a tile:
a matrix-vector product); ``G > 1`` is list-major (a list several queries probe is read once per
``G`` of them, and scored by a matrix product).

Per tile the plan holds its chunk and its ``G`` query ids (``q``, one past the last query, marks
an empty place); per query, the places ``tile * G + g`` it holds, in ``slots``. Tile and place
counts are rounded up (few shapes compile). :func:`tile_queries` picks ``G`` for a batch from the
measured cost of a tile (module constants). :func:`lay_out_chunks` lays the lists out in the
chunks a plan addresses.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

#: Query groups the scan is compiled for (a power of two each).
TILE_QUERIES = (1, 4, 8, 16)

#: The cost of reading and scoring one chunk, in units of one more query column of the same tile.
#: Measured as CPU time of whole batch searches (200,000 x 384 rows in 256 lists, chunks of 256
#: rows, batch 64, nprobe 8 and 32, each G forced; XLA:CPU on a 2-core AMD EPYC): 0.031-0.036 ms
#: a tile at G = 1, 0.061 at G = 4, 0.082-0.086 at G = 8, 0.108-0.128 at G = 16, i.e. about
#: ``0.007 ms x (TILE_FIXED + G)``; the model's choice was the fastest G at both nprobe.
TILE_FIXED = 4.0


class TilePlan(NamedTuple):
    """``tile_chunk [D*B]`` (a device-local chunk), ``tile_query [D*B, G]`` (query ids, ``q``:
    empty), ``slots [D*q, S]`` (for device ``d`` and query ``i``, row ``d*q + i``: the places
    ``tile * G + g`` of the device's tiles holding query ``i``; ``B * G``: none)."""

    tile_chunk: np.ndarray
    tile_query: np.ndarray
    slots: np.ndarray


def pow2(n: int) -> int:
    """The least power of two >= ``n`` (1 for ``n <= 1``)."""
    return 1 << max(int(n) - 1, 0).bit_length()


def bucket(n: int, least: int = 1) -> int:
    """``n`` rounded up to the next of 8 steps per octave (for ``2^m < n <= 2^(m+1)`` a multiple
    of ``2^m / 8``: under 12.5% padding), and to a multiple of ``least``: few shapes compile,
    little work is wasted."""
    step = least * max(1, pow2(n) // 16 // least)
    return max(-(-int(n) // step) * step, least)


#: Chunk reads a scan loop gets at least before a device's tiles are split over several loops:
#: about 16 x 256 rows x 384 float32 (6 MB, a few hundred microseconds), so that handing a loop
#: to another thread costs little beside its work.
MIN_TILES_PER_SCAN = 16


def tiles_per_step(group: int) -> int:
    """Tiles scored per scan step: 8 pairs at ``G = 1``, at least 2 tiles (measured with
    ``TILE_FIXED``: fewer, larger steps cost the same)."""
    return max(2, 8 // group)


def ranks(counts: np.ndarray) -> np.ndarray:
    """``0 .. counts[0] - 1``, then ``0 .. counts[1] - 1``, ...: each item's rank within its
    group, for items laid out group by group (int64)."""
    counts = np.asarray(counts, np.int64)
    return np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)


def _probes_by_list(probed: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(lists, counts, queries)``: each probed list once (ascending), how many queries probe
    it, and those queries list by list (ascending within a list)."""
    nq, nprobe = probed.shape
    flat = probed.reshape(-1)
    query = np.repeat(np.arange(nq), nprobe)
    order = np.lexsort((query, flat))
    lists, counts = np.unique(flat[order], return_counts=True)
    return lists, counts, query[order]


def count_tiles(probed: np.ndarray, group: int, chunks_per_list: np.ndarray) -> int:
    """The tiles of the lists ``probed`` with ``group`` queries a tile (before padding):
    ``sum over probed lists j of ceil(m_j / group) * chunks_j``."""
    lists, counts, _ = _probes_by_list(probed)
    return int(np.sum(-(-counts // group) * chunks_per_list[lists]))


def scans_for(tiles: int, devices: int, most: int) -> int:
    """Loops a device splits its share of ``tiles`` into: at most ``most``, each with at least
    :data:`MIN_TILES_PER_SCAN` tiles (1 when there are fewer)."""
    return max(1, min(most, tiles // max(devices, 1) // MIN_TILES_PER_SCAN))


def tile_queries(probed: np.ndarray, chunks_per_list: np.ndarray) -> int:
    """The ``G`` of :data:`TILE_QUERIES` of least modelled cost for the lists ``probed``:
    ``sum over probed lists j of ceil(m_j / G) * chunks_j * (TILE_FIXED + G)`` (``m_j``: the
    queries probing list ``j``); ties to the smaller ``G``."""
    lists, counts, _ = _probes_by_list(probed)
    chunks = chunks_per_list[lists]
    costs = [float(np.sum(-(-counts // g) * chunks) * (TILE_FIXED + g)) for g in TILE_QUERIES]
    return TILE_QUERIES[int(np.argmin(costs))]


def plan_tiles(
    probed: np.ndarray,
    group: int,
    *,
    chunks_per_list: np.ndarray,
    first_chunk: np.ndarray,
    device_of: np.ndarray,
    devices: int,
    empty_chunk: int,
    scans: int = 1,
) -> TilePlan:
    """The :class:`TilePlan` of the lists ``probed [q, nprobe]`` with ``group`` queries a tile.

    A list probed by ``m`` queries gets ``ceil(m / group)`` query groups (its queries in
    ascending order, ``group`` at a time), each one tile per chunk of the list, on the device
    holding the list; a device's tiles are sorted by chunk (the groups of one chunk one after
    the other: the chunk is read from memory once, then from cache). ``B`` is rounded up by
    :func:`bucket` to a multiple of ``scans`` times :func:`tiles_per_step` (padding tiles:
    ``empty_chunk``, no query; the scan splits a device's tiles into ``scans`` runs), ``S`` by
    :func:`bucket`."""
    nq = probed.shape[0]
    lists, counts, queries = _probes_by_list(probed)
    groups = -(-counts // group)  # query groups of each probed list
    n_groups = int(groups.sum())
    rank = ranks(counts)
    group_of = np.repeat(np.cumsum(groups) - groups, counts) + rank // group
    members = np.full((n_groups, group), nq, np.int64)
    members[group_of, rank % group] = queries
    group_list = np.repeat(lists, groups)
    cnt = chunks_per_list[group_list]
    tile_group = np.repeat(np.arange(n_groups), cnt)
    within = ranks(cnt)
    chunk = np.repeat(first_chunk[group_list], cnt) + within
    device = np.repeat(device_of[group_list], cnt)
    order = np.lexsort((tile_group, chunk, device))
    tile_group, chunk, device = tile_group[order], chunk[order], device[order]
    per_dev = np.bincount(device, minlength=devices)
    b = bucket(int(per_dev.max()), tiles_per_step(group) * scans)
    pos = ranks(per_dev)
    tile_chunk = np.full((devices, b), empty_chunk, np.int32)
    tile_query = np.full((devices, b, group), nq, np.int32)
    tile_chunk[device, pos] = chunk
    tile_query[device, pos] = members[tile_group]
    # places: (tile, g) holding a query; slot = the place's rank among its (device, query)'s
    held = tile_query[device, pos] < nq  # [tiles, G]
    t_idx, g_idx = np.nonzero(held)
    p_dev, p_query = device[t_idx], tile_query[device[t_idx], pos[t_idx], g_idx]
    place = pos[t_idx] * group + g_idx
    key = p_dev * nq + p_query
    per_key = np.bincount(key, minlength=devices * nq)
    by_key = np.argsort(key, kind="stable")
    slot = np.empty(len(key), np.int64)
    slot[by_key] = ranks(per_key)
    width = bucket(int(per_key.max()))
    slots = np.full((devices, nq, width), b * group, np.int32)
    slots[p_dev, p_query, slot] = place
    return TilePlan(
        tile_chunk.reshape(-1), tile_query.reshape(devices * b, group), slots.reshape(-1, width)
    )


def chunk_starts(per_list, device_of, n_dev: int) -> tuple[np.ndarray, int]:
    """``(first_chunk [L], W)`` of the chunk layout (:func:`lay_out_chunks`), from the chunk
    counts alone: where each list starts on its device (its device's lists in list order) and the
    chunks a device holds, ``W`` = the largest device's count plus one (all padding)."""
    first_chunk = np.zeros(len(per_list), np.int64)
    held = []
    for d in range(n_dev):
        mine = np.flatnonzero(device_of == d)
        first_chunk[mine] = np.cumsum(per_list[mine]) - per_list[mine]
        held.append(int(per_list[mine].sum()))
    return first_chunk, max(held) + 1


def lay_out_chunks(rows, ids, offsets, per_list, device_of, n_dev: int, c: int):
    """The chunks tiles address: ``rows`` (ids ``ids``) laid out list by list in chunks of ``c``
    rows, list ``j`` (``per_list[j]`` chunks) on device ``device_of[j]`` of ``n_dev``:
    ``(data [D, W, C, d], chunk_ids [D, W, C], first_chunk [L])``: device ``d``'s lists in
    list order, each from a chunk boundary (``first_chunk``: where a list starts on its device),
    the rest ``-1``-id padding; ``W`` is the largest device's chunk count plus one (all padding)."""
    sizes = np.diff(offsets)
    first_chunk, width = chunk_starts(per_list, device_of, n_dev)
    data = np.zeros((n_dev, width, c, rows.shape[1]), np.float32)
    chunk_ids = np.full((n_dev, width, c), -1, np.int32)
    for d in range(n_dev):
        mine = np.flatnonzero(device_of == d)
        if not mine.size:
            continue
        lo, hi = offsets[mine[0]], offsets[mine[-1] + 1]
        list_of = np.repeat(mine, sizes[mine])
        at = first_chunk[list_of] * c + np.arange(lo, hi) - offsets[list_of]  # row slot
        data[d].reshape(-1, rows.shape[1])[at] = rows[lo:hi]
        chunk_ids[d].reshape(-1)[at] = ids[lo:hi]
    return data, chunk_ids, first_chunk
