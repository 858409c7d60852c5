"""The host's list-major scan (issue 49): a batch's lists each read once for all the queries
probing them, with the candidates each query would get alone."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxparadigm.retrieval.dense.ivf_host_scan import GEMM_QUERIES, host_candidates


class CountedRows:
    """``rows`` that record each slice read (``(start, stop)``)."""

    def __init__(self, rows: np.ndarray) -> None:
        self.rows, self.reads = rows, []

    def __getitem__(self, key):
        self.reads.append((key.start, key.stop))
        return self.rows[key]


def layout(seed: int, lists: int, n: int, dim: int = 8):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, dim)).astype(np.float32)
    sizes = np.bincount(rng.integers(0, lists, n), minlength=lists)
    return rng, x, np.concatenate([[0], np.cumsum(sizes)])


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    lists=st.integers(1, 12),
    n=st.integers(1, 300),
    nq=st.integers(1, 9),
    k=st.integers(1, 20),
    data=st.data(),
)
def test_a_batch_gets_each_querys_own_candidates_and_reads_each_list_once(
    seed, lists, n, nq, k, data
):
    rng, x, offsets = layout(seed, lists, n)
    nprobe = data.draw(st.integers(1, lists))
    probed = np.stack([rng.permutation(lists)[:nprobe] for _ in range(nq)])
    q = rng.standard_normal((nq, x.shape[1])).astype(np.float32)
    tol = rng.uniform(0, 0.5, nq).astype(np.float32)
    rows = CountedRows(x)
    got = host_candidates(q, rows, offsets, probed, k, tol)
    assert len(got) == nq
    touched = np.unique(probed)
    want_reads = {(int(offsets[j]), int(offsets[j + 1])) for j in touched}
    want_reads = {r for r in want_reads if r[0] < r[1]}  # an empty list is not read
    assert sorted(rows.reads) == sorted(want_reads)  # each probed list read once
    for i in range(nq):
        pos = np.concatenate([np.arange(offsets[j], offsets[j + 1]) for j in probed[i]])
        if len(pos) <= k:
            np.testing.assert_array_equal(np.sort(got[i]), np.sort(pos))
        else:  # the rule by hand: float64 scores, the k-th largest, the rows within tol[i]
            s = x[pos].astype(np.float64) @ q[i].astype(np.float64)
            t = np.sort(s)[-k]
            assert set(pos[s >= t - tol[i] + 1e-4]) <= set(got[i])  # clear of float32 rounding
            assert set(got[i]) <= set(pos[s >= t - tol[i] - 1e-4])
            assert len(set(got[i])) == len(got[i])
        # alone, the query gets the same candidates as in the batch
        alone = host_candidates(q[i : i + 1], x, offsets, probed[i : i + 1], k, tol[i : i + 1])
        np.testing.assert_array_equal(np.sort(alone[0]), np.sort(got[i]))


def test_candidates_are_the_rows_near_the_kth_score():
    """Two lists, two queries sharing one of them: the rows within tol of each query's k-th."""
    x = np.array([[1.0, 0], [0.9, 0], [0.5, 0], [0, 1.0], [0, 0.2], [0, 0.95]], np.float32)
    offsets = np.array([0, 3, 6])
    q = np.array([[1.0, 0], [0, 1.0]], np.float32)
    probed = np.array([[0, 1], [1, 0]])
    got = host_candidates(q, x, offsets, probed, 2, np.array([0.05, 0.0], np.float32))
    np.testing.assert_array_equal(np.sort(got[0]), [0, 1])  # 1.0, 0.9 (0.5 is 0.4 below)
    np.testing.assert_array_equal(np.sort(got[1]), [3, 5])  # 1.0, 0.95
    got = host_candidates(q, x, offsets, probed, 2, np.array([0.45, 0.8], np.float32))
    np.testing.assert_array_equal(np.sort(got[0]), [0, 1, 2])
    np.testing.assert_array_equal(np.sort(got[1]), [3, 4, 5])
    got = host_candidates(q[:1], x, offsets, np.array([[1]]), 3, np.zeros(1, np.float32))
    np.testing.assert_array_equal(np.sort(got[0]), [3, 4, 5])  # at most k rows: all of them


def test_an_empty_batch_has_no_candidates_and_reads_nothing():
    _, x, offsets = layout(3, 4, 40)
    rows = CountedRows(x)
    q = np.zeros((0, x.shape[1]), np.float32)
    assert host_candidates(q, rows, offsets, np.zeros((0, 2), np.int64), 5, np.zeros(0)) == []
    assert rows.reads == []


def test_a_list_many_queries_probe_is_one_product_with_each_querys_candidates():
    """List 0 probed by 12 queries (>= GEMM_QUERIES: one BLAS product), list 1 by 7 (one
    ``vecdot`` each), list 2 by 5: each read once, each query's candidates as when alone."""
    rng, x, offsets = layout(7, 3, 120)
    q = rng.standard_normal((12, x.shape[1])).astype(np.float32)
    probed = np.array([[0, 1]] * 7 + [[2, 0]] + [[0, 2]] * 4)
    assert np.sum(probed == 0) >= GEMM_QUERIES > np.sum(probed == 1)
    tol = np.full(12, 0.01, np.float32)
    rows = CountedRows(x)
    got = host_candidates(q, rows, offsets, probed, 4, tol)
    assert sorted(rows.reads) == [(offsets[j], offsets[j + 1]) for j in range(3)]
    for i in range(12):
        alone = host_candidates(q[i : i + 1], x, offsets, probed[i : i + 1], 4, tol[:1])
        np.testing.assert_array_equal(np.sort(alone[0]), np.sort(got[i]))
        pos = np.concatenate([np.arange(offsets[j], offsets[j + 1]) for j in probed[i]])
        s = x[pos].astype(np.float64) @ q[i].astype(np.float64)
        t = np.sort(s)[-4]
        assert set(pos[s >= t - 0.01 + 1e-4]) <= set(got[i]) <= set(pos[s >= t - 0.01 - 1e-4])
