"""The host's part of an IVF search (C1.1): the list-major scan of a batch, each list that some
query probes read once, in place in the index's rows, and scored for all the queries probing it
(FAISS's list-major mode, faiss#2306 "pmode 4"; at one query it is what ``IndexIVFFlat`` does per
query), and the float64 rescoring of every search's candidates (:func:`rescored`).

For a query ``q`` and its probed lists ``P``, with the rows of list ``j`` at positions
``offsets[j] .. offsets[j + 1]`` (contiguous: the rows are laid out list by list):

1. ``s_r = X_r . q`` in float32 for every row ``r`` of the lists in ``P``, no copy of the rows:
   a list that ``G >= GEMM_QUERIES`` of the batch's queries probe by one BLAS product
   ``X[a:b] @ Q_G^T`` (on BLAS's threads); the other lists by a matrix-vector product per query,
   ``np.vecdot`` (a single-threaded dot per row: on 2 cores it read cold lists of 195 and 1,560
   rows at 21 and 28 GB/s where BLAS's matrix-vector product on both cores read at 10 and 22;
   the lists split over 2 Python threads gained 17% at batch 1 on 1M rows, lost 31% on 200,000
   (the GIL handed over per list) and 2-9% at batches of 16-64: ``benchmarks/RESULTS.md``);
2. ``t`` = the ``k``-th largest of the ``s_r``; the candidates are every row with
   ``s_r >= t - tol``, ``tol`` the float32 dot's error bound ``3e-5 ||q|| max ||x||`` (the device
   scan's rule for a near tie, :mod:`~jaxparadigm.retrieval.dense.ivf_search`): a row of the true
   top ``k`` has ``s_r >= T - e`` and ``t <= T + e`` (``T`` the true ``k``-th score, ``e`` the
   error), so no row of the true top ``k`` is left out while ``tol >= 2e``;
3. the caller scores the candidates again in float64 and keeps the best ``k``, ties to the lower
   row id, as it does with the device scan's candidates, so both scans give the same ids and
   scores.

The probe of a small batch runs here too (:func:`host_probe`): ``P`` = the ``nprobe`` largest

    s_ij = fl(Q_i . C_j) - ||C_j||^2 / 2,

ties to the lower list, each dot one ``np.vecdot`` of query ``i`` and centroid ``j`` (one
single-threaded ``sdot`` a pair, whose order of sums depends on nothing but the two vectors), so
a query gets the same lists in any batch, alone or not. The device's program (a matrix product
whose sums XLA orders by the batch's shape: a lone query's scores differ from the same query's in
a batch of 64 in the last bit, measured) probes the larger batches; ``IVFSearcher`` uses one
probe per batch for either scan, so both scans give the same ids and scores. Within ``P`` the
order (nearest first, ties to the lower list) changes no result: the scan's candidates are a set.

A search then pays for no program dispatch and no scan fixed cost (tiles, slots, a merge
across devices); ``IVFSearcher`` takes this path up to ``host_queries`` queries (the measured
crossover, ``benchmarks/RESULTS.md``).
"""

from __future__ import annotations

import numpy as np

from jaxparadigm.retrieval.dense.ivf_plan import ranks
from jaxparadigm.retrieval.dense.vector_search import TopK

__all__ = [
    "GEMM_QUERIES",
    "HOST_PROBE_QUERIES",
    "HOST_QUERIES",
    "host_candidates",
    "host_probe",
    "list_positions",
    "rescored",
]

#: Batches of at most this many queries are scanned on the host, list-major (this module):
#: faster than the device's tiles at every batch ``benchmarks/ivf_host_crossover.py`` measured
#: (benchmarks/RESULTS.md), bounded for the batch's scores it holds (``ivf_search``'s module
#: docstring).
HOST_QUERIES = 256
#: ... and batches of at most this many are probed on the host too (:func:`host_probe`, a dot a
#: (query, list) pair); a larger batch by the device's program (one matrix product). Measured
#: (1,024 lists of 384 dims, 2-core AMD EPYC, medians): host 31 / 61 / 123 / 351 us at 1 / 2 /
#: 4 / 8 queries, the device's program 70 / 101 / 88 / 110 us.
HOST_PROBE_QUERIES = 4
#: A list that at least this many of a batch's queries probe is scored by one BLAS product; one
#: probed by fewer, by ``np.vecdot`` per query (measured on 2 cores, lists of 195 and 1,560 rows:
#: the product, on both cores, caught up with the single-threaded dots at 8 queries).
GEMM_QUERIES = 8


def host_probe(
    queries: np.ndarray, centroids: np.ndarray, half: np.ndarray, nprobe: int
) -> np.ndarray:
    """The ``nprobe`` lists of each query, nearest first, ties to the lower list: int
    ``[q, nprobe]`` (module docstring: one dot a (query, list) pair, whatever the batch).
    ``half = ||C_j||^2 / 2`` (float32 ``[L]``)."""
    queries = np.asarray(queries, np.float32)
    s = np.vecdot(centroids[None], queries[:, None]) - half[None, :]  # [q, L]
    return np.argsort(-s, axis=1, kind="stable")[:, :nprobe]  # stable: ties to the lower list


def list_positions(offsets: np.ndarray, lists: np.ndarray) -> np.ndarray:
    """Positions (into the rows) of every row of ``lists``, list after list."""
    lists = np.asarray(lists, np.int64)
    sizes = offsets[lists + 1] - offsets[lists]
    return ranks(sizes) + np.repeat(offsets[lists], sizes)


def host_candidates(
    queries: np.ndarray,
    rows: np.ndarray,
    offsets: np.ndarray,
    probed: np.ndarray,
    k: int,
    tol: np.ndarray,
) -> list[np.ndarray]:
    """Positions (into ``rows``) of the candidates for each query's top ``k`` in its lists
    ``probed[i]`` (module docstring), list-major: the batch's (query, list) pairs grouped by list,
    each list read once and scored for all the queries ``G`` probing it, by one BLAS product
    ``X_j Q_G^T`` when ``|G| >=`` :data:`GEMM_QUERIES`, else by ``np.vecdot`` per query; every
    row of a query's lists when they hold at most ``k`` rows. ``tol[i]``: query ``i``'s near-tie
    bound. A query's candidates are a set (in list order, not probe order)."""
    queries = np.asarray(queries, np.float32)
    offsets = np.asarray(offsets, np.int64)
    n_q, nprobe = probed.shape
    flat = probed.ravel()
    order = np.argsort(flat, kind="stable")  # the pairs, list by list
    lists, who = flat[order], order // nprobe
    bounds = np.flatnonzero(np.diff(lists, prepend=-1, append=-1))  # none for no pairs
    first = lists[bounds[:-1]]  # each probed list once
    starts, ends, who = offsets[first].tolist(), offsets[first + 1].tolist(), who.tolist()
    scores: list[list[np.ndarray]] = [[] for _ in range(n_q)]
    for lo, hi, a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist(), starts, ends, strict=True):
        if a == b:
            continue
        block, group = rows[a:b], who[lo:hi]  # the rows in place (float32, as laid out)
        if len(group) >= GEMM_QUERIES:  # BLAS, on its threads
            got = np.ascontiguousarray((block @ queries[group].T).T)  # a query's contiguous
            for i, s in zip(group, got, strict=True):
                scores[i].append(s)
        else:  # a dot per row, single-threaded: the list stays in cache for the next query
            for i in group:
                scores[i].append(np.vecdot(block, queries[i]))
    cands = []
    for i in range(n_q):
        mine = np.sort(probed[i])  # the order the scores came in
        lens = offsets[mine + 1] - offsets[mine]
        past = np.cumsum(lens)  # where each list's scores end in the query's scores
        if not len(past) or past[-1] <= k:
            cands.append(list_positions(offsets, mine))
            continue
        s = np.concatenate(scores[i])
        t = np.partition(s, len(s) - k)[len(s) - k]  # the k-th largest
        hit = np.flatnonzero(s >= t - np.float32(tol[i]))  # into s, then into the rows:
        at = np.searchsorted(past, hit, side="right")  # the list each hit lies in
        cands.append(offsets[mine[at]] + hit - (past[at] - lens[at]))
    return cands


def rescored(
    queries: np.ndarray, rows: np.ndarray, ids: np.ndarray, k: int, cands: list[np.ndarray]
) -> TopK:
    """Each query's best ``k`` of its candidate positions ``cands[i]`` (into ``rows``, whose row
    ids are ``ids``): float64 ``x . q`` (one elementwise product and row sum, so equal rows score
    equal), ties to the lower row id, rounded to float32; ``-1``/``-inf`` past the candidates."""
    out_s = np.full((len(queries), k), -np.inf, np.float32)
    out_i = np.full((len(queries), k), -1, np.int64)
    for i, cand in enumerate(cands):
        pos = np.sort(cand)  # in file order
        got = ids[pos]
        s = (np.asarray(rows[pos], np.float64) * queries[i].astype(np.float64)).sum(1)
        order = np.lexsort((got, -s))[:k]
        out_s[i, : len(order)], out_i[i, : len(order)] = s[order], got[order]
    return TopK(out_s, out_i)
