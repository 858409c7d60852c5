"""The host's probe of a small IVF batch (issue 49): the nearest ``nprobe`` lists up to float32
rounding (a float64 oracle), ties to the lower list, each query's lists whatever its batch, the
device probe's lists wherever the two cannot round apart; the searcher probes a batch once, on
the host up to ``HOST_PROBE_QUERIES`` queries, for either scan."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jaxparadigm.retrieval.dense.ivf_search as ivf_search
from jaxparadigm.retrieval.dense.ivf_host_scan import host_probe
from jaxparadigm.retrieval.dense.ivf_search import HOST_PROBE_QUERIES, HOST_QUERIES, IVFSearcher


def searcher(centroids: np.ndarray, rows: int = 64, seed: int = 0) -> IVFSearcher:
    """A searcher over ``rows`` random rows spread over the lists (the probe reads only the
    centroids)."""
    rng = np.random.default_rng(seed)
    lists, dim = centroids.shape
    x = rng.standard_normal((rows, dim)).astype(np.float32)
    sizes = np.bincount(rng.integers(0, lists, rows), minlength=lists)
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    return IVFSearcher(centroids, offsets, np.arange(rows), x)


def half(c: np.ndarray) -> np.ndarray:
    return np.float32(0.5) * np.sum(c * c, 1)


def rounding(q: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Each query's bound on a float32 score's error, any order of sums: ``(d + 2) u (||q|| m +
    m^2 / 2)``, ``m = max ||C_j||``."""
    m = float(np.linalg.norm(c, axis=1).max())
    return (c.shape[1] + 2) * 2.0**-24 * (np.linalg.norm(q, axis=1) * m + m * m / 2)


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    lists=st.integers(2, 40),
    dim=st.sampled_from([3, 16, 64]),
    nq=st.integers(1, 6),
    data=st.data(),
)
def test_the_host_probe_is_the_nearest_lists_alone_or_batched(seed, lists, dim, nq, data):
    rng = np.random.default_rng(seed)
    c = rng.standard_normal((lists, dim)).astype(np.float32) * rng.uniform(0.1, 10)
    if data.draw(st.booleans()):  # equal centroids: exact ties
        c[rng.integers(0, lists, lists // 2)] = c[0]
    q = rng.standard_normal((nq, dim)).astype(np.float32)
    nprobe = data.draw(st.integers(1, lists))
    got = host_probe(q, c, half(c), nprobe)
    assert got.shape == (nq, nprobe) and got.dtype.kind == "i"
    exact = q.astype(np.float64) @ c.T.astype(np.float64) - 0.5 * np.sum(
        c.astype(np.float64) ** 2, 1
    )
    e = rounding(q, c)
    for i in range(nq):
        assert len(set(got[i])) == nprobe  # distinct lists
        alone = host_probe(q[i : i + 1], c, half(c), nprobe)
        np.testing.assert_array_equal(alone[0], got[i])  # the same lists, the same order
        out = np.setdiff1d(np.arange(lists), got[i])
        if len(out):  # no list left out is nearer than a probed one, beyond rounding
            assert exact[i, got[i]].min() >= exact[i, out].max() - 2 * e[i]
        # nearest first (to rounding), equal scores in list order
        s = exact[i, got[i]]
        assert np.all(np.diff(s) <= 2 * e[i])
    # the device's program chooses the same lists where no two scores straddle the boundary
    # within the rounding of both computations
    want = np.asarray(searcher(c).probe(q, nprobe) if nq > HOST_PROBE_QUERIES else None)
    if nq > HOST_PROBE_QUERIES and nprobe < lists:
        ranked = np.sort(exact, 1)[:, ::-1]
        clear = ranked[:, nprobe - 1] - ranked[:, nprobe] > 4 * e
        np.testing.assert_array_equal(np.sort(got[clear], 1), np.sort(want[clear], 1))


def test_every_list_is_nearest_first_with_ties_to_the_lower_list():
    c = np.array([[0.0, 1.0], [1.0, 0.0], [0.0, 1.0], [2.0, 0.0]], np.float32)
    q = np.array([[0.0, 1.0]], np.float32)  # scores 0.5, 0, 0.5, -2
    np.testing.assert_array_equal(host_probe(q, c, half(c), 4), [[0, 2, 1, 3]])
    np.testing.assert_array_equal(host_probe(q, c, half(c), 2), [[0, 2]])
    np.testing.assert_array_equal(host_probe(q, c, half(c), 1), [[0]])


@pytest.mark.parametrize("nq", [1, 3])
def test_an_exact_tie_at_the_nprobe_th_list_goes_to_the_lower_list(nq):
    """Lists 1 and 3 are equal and straddle the boundary of nprobe 2: the lower one is probed,
    as ``lax.top_k`` (the device's probe) breaks ties."""
    rng = np.random.default_rng(3)
    c = rng.standard_normal((5, 32)).astype(np.float32)
    q = np.repeat(rng.standard_normal((1, 32)).astype(np.float32), nq, 0)
    c[0] = q[0]  # nearest by far
    c[2], c[4] = -3 * q[0], -4 * q[0]  # farthest
    c[3] = c[1]
    np.testing.assert_array_equal(host_probe(q, c, half(c), 2), [[0, 1]] * nq)
    np.testing.assert_array_equal(host_probe(q, c, half(c), 3), [[0, 1, 3]] * nq)
    big = np.repeat(q[:1], HOST_PROBE_QUERIES + 1, 0)  # the device's probe: the same rule
    np.testing.assert_array_equal(searcher(c).probe(big, 2), [[0, 1]] * len(big))


def test_many_equal_lists_at_the_boundary_go_in_list_order():
    """40 equal centroids (lists 10-49) straddle the boundary of nprobe 11 among 64 lists: the
    10 lowest of them, in list order, after the nearest list (a sort that is not stable would
    take any 10 of them)."""
    rng = np.random.default_rng(4)
    c = rng.standard_normal((64, 16)).astype(np.float32)
    q = rng.standard_normal((2, 16)).astype(np.float32)
    q[1] = q[0]
    c[:] = -5 * q[0]  # far
    c[0] = q[0]  # nearest
    c[10:50] = 0.5 * q[0]  # 40 equal lists, second nearest
    got = host_probe(q, c, half(c), 11)
    np.testing.assert_array_equal(got, [[0, *range(10, 20)]] * 2)


def test_a_batch_is_probed_once_on_the_host_up_to_host_probe_queries(monkeypatch):
    rng = np.random.default_rng(1)
    c = rng.standard_normal((8, 16)).astype(np.float32)
    s = searcher(c, rows=200)
    device, host = [], []
    real_device, real_host = ivf_search._probe, ivf_search.host_probe
    monkeypatch.setattr(ivf_search, "_probe", lambda mesh: device.append(1) or real_device(mesh))
    monkeypatch.setattr(
        ivf_search, "host_probe", lambda *a: host.append(len(a[0])) or real_host(*a)
    )
    for b in (1, HOST_PROBE_QUERIES, HOST_PROBE_QUERIES + 1):
        q = rng.standard_normal((b, 16)).astype(np.float32)
        s.host_queries = HOST_QUERIES
        on_host = s.search(q, 5, 3)
        s.host_queries = 0
        on_device = s.search(q, 5, 3)
        np.testing.assert_array_equal(on_host.ids, on_device.ids)
        np.testing.assert_array_equal(on_host.scores, on_device.scores)
        small = b <= HOST_PROBE_QUERIES
        assert (host, device) == (([b, b], []) if small else ([], [1, 1])), b
        for i in range(b):  # each query's own result (its lists whatever the batch when small)
            one = s.search(q[i : i + 1], 5, 3)
            if small:
                np.testing.assert_array_equal(one.ids[0], on_host.ids[i])
        host.clear(), device.clear()
