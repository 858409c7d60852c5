"""The host's probe of a small IVF batch (issue 49): the device probe's lists wherever the two
cannot round apart, ``None`` (the device decides) at a near tie, and the searcher's use of both."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    lists=st.integers(2, 40),
    dim=st.sampled_from([3, 16, 64]),
    nq=st.integers(1, 4),
    data=st.data(),
)
def test_the_host_probe_equals_the_device_probe(seed, lists, dim, nq, data):
    rng = np.random.default_rng(seed)
    c = rng.standard_normal((lists, dim)).astype(np.float32) * rng.uniform(0.1, 10)
    q = rng.standard_normal((nq, dim)).astype(np.float32)
    nprobe = data.draw(st.integers(1, lists))
    got = host_probe(q, c, half(c), nprobe)
    want = np.asarray(searcher(c).probe(q, nprobe))
    if got is None:  # a near tie at the boundary: the host must have seen one
        s = q @ c.T - half(c)
        gaps = np.sort(s, 1)[:, ::-1]
        assert nprobe < lists
        assert np.min(gaps[:, nprobe - 1] - gaps[:, nprobe]) < 1e-3 * np.abs(s).max()
    else:
        assert got.shape == (nq, nprobe)
        np.testing.assert_array_equal(np.sort(got, 1), np.sort(want, 1))
        # nearest first (the device's order where no two probed lists tie)
        s = q @ c.T - half(c)
        assert np.all(np.diff(np.take_along_axis(s, got, 1), axis=1) <= 0)


def test_every_list_is_nearest_first_with_ties_to_the_lower_list():
    c = np.array([[0.0, 1.0], [1.0, 0.0], [0.0, 1.0], [2.0, 0.0]], np.float32)
    q = np.array([[0.0, 1.0]], np.float32)  # scores 0.5, 0, 0.5, -2
    np.testing.assert_array_equal(host_probe(q, c, half(c), 4), [[0, 2, 1, 3]])
    np.testing.assert_array_equal(host_probe(q, c, half(c), 2), [[0, 2]])


@pytest.mark.parametrize("scale", [0.0, 1e-7, 4e-6])
def test_a_near_tie_at_the_nprobe_th_list_leaves_the_choice_to_the_device(scale):
    """Lists 1 and 2 straddle the boundary of nprobe 2 with scores equal or a few ulps apart
    (within 4e: the device could order them either way): no host answer. A clear gap: one."""
    rng = np.random.default_rng(3)
    c = rng.standard_normal((4, 32)).astype(np.float32)
    q = rng.standard_normal((1, 32)).astype(np.float32)
    c[0] = q[0]  # nearest by far
    c[3] = -3 * q[0]  # farthest
    c[2] = c[1] * np.float32(1 + scale)
    assert host_probe(q, c, half(c), 2) is None
    assert host_probe(q, c, half(c), 3) is not None  # lists 1 and 2 both in: no tie at 3
    c[2] = c[1] * np.float32(1.5)
    assert host_probe(q, c, half(c), 2) is not None


def test_a_small_batch_probes_on_the_host_unless_a_list_ties(monkeypatch):
    rng = np.random.default_rng(1)
    c = rng.standard_normal((8, 16)).astype(np.float32)
    s = searcher(c, rows=200)
    calls = []
    real = IVFSearcher.probe
    monkeypatch.setattr(IVFSearcher, "probe", lambda self, *a: calls.append(1) or real(self, *a))
    q = rng.standard_normal((2, 16)).astype(np.float32)
    host = s.search(q, 5, 3)
    assert calls == []  # the host's probe
    s.host_queries = 0
    device = s.search(q, 5, 3)
    assert calls == [1]
    np.testing.assert_array_equal(host.ids, device.ids)
    np.testing.assert_array_equal(host.scores, device.scores)
    # two equal centroids at the boundary: the device's probe decides
    c2 = c.copy()
    order = np.argsort(-(q[0] @ c.T - half(c)))
    c2[order[3]] = c2[order[2]]
    tied = searcher(c2, rows=200)
    tied.search(q[:1], 5, 3)
    assert calls == [1, 1]
    # a batch past HOST_PROBE_QUERIES: the host scans it, the device probes it
    big = rng.standard_normal((HOST_PROBE_QUERIES + 1, 16)).astype(np.float32)
    s.host_queries = HOST_QUERIES
    got = s.search(big, 5, 3)
    assert calls == [1, 1, 1]
    s.search(big[:HOST_PROBE_QUERIES], 5, 3)
    assert calls == [1, 1, 1]
    s.host_queries = 0
    device = s.search(big, 5, 3)
    np.testing.assert_array_equal(got.ids, device.ids)
    np.testing.assert_array_equal(got.scores, device.scores)
