"""k-means, the IVF coarse quantiser (issue 38): a numpy implementation of the same rules is the
oracle (same training sample, same init, same empty-cluster rule -> same assignments).

The oracle's distances are float64 ``||x - c||^2`` (the module scores ``x . c - ||c||^2 / 2`` in
float32): the data are drawn so that no row is near-equidistant from two centroids.
"""

import chex
import jax.numpy as jnp
import numpy as np
import pytest
from absl.testing import parameterized
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxparadigm.errors import InputError
from jaxparadigm.retrieval.dense.kmeans import (
    assign,
    kmeans,
    kmeans_init,
    nearest,
    training_rows,
)
from jaxparadigm.retrieval.dense.vector_search import RowSource


def numpy_kmeans(x, lists, seed, iters, cap):
    """Reference Lloyd's algorithm (float64) with the module's documented rules."""
    rows = training_rows(len(x), lists, seed, cap)
    t = x[rows].astype(np.float64)
    c = t[kmeans_init(len(t), lists, seed)].copy()

    def near(c):
        d = ((t[:, None, :] - c[None, :, :]) ** 2).sum(-1)
        return np.argmin(d, axis=1)  # first minimum: ties to the lower centroid

    for _ in range(iters):
        a = near(c)
        new = np.zeros_like(c)
        counts = np.bincount(a, minlength=lists)
        np.add.at(new, a, t)
        new[counts > 0] /= counts[counts > 0, None]
        far_d = ((t - c[a]) ** 2).sum(1)
        far = np.lexsort((np.arange(len(t)), -far_d))  # farthest first, ties to the lower row
        empty = np.flatnonzero(counts == 0)
        new[empty] = t[far[: len(empty)]]
        c = new
    return c, near(c)


def blobs(seed, n, dim, centers, sigma=0.05):
    rng = np.random.default_rng(seed)
    mu = rng.standard_normal((centers, dim)) * 2
    return (mu[rng.integers(0, centers, n)] + sigma * rng.standard_normal((n, dim))).astype(
        np.float32
    )


@settings(max_examples=10, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    n=st.integers(8, 200),
    lists=st.integers(1, 8),
    iters=st.integers(0, 6),
    cap=st.sampled_from([4, 16, 256]),
)
def test_same_assignments_as_numpy_from_the_same_init(seed, n, lists, iters, cap):
    x = blobs(seed, n, 6, centers=max(lists, 3))
    km = kmeans(x, lists, seed=seed, iters=iters, max_points_per_list=cap)
    want_c, want_a = numpy_kmeans(x, lists, seed, iters, cap)
    np.testing.assert_array_equal(km.assignment, want_a)
    np.testing.assert_allclose(km.centroids, want_c, atol=2e-4)
    assert km.train_rows == min(n, cap * lists) and km.centroids.dtype == np.float32


def test_an_empty_cluster_takes_the_farthest_row():
    """Two copies of one point as init: the second centroid gets no row (ties to the lower
    centroid) and must move to the training row farthest from its centroid (row 5, at 10)."""
    x = np.array([[0.0], [0.1], [0.2], [0.0], [0.3], [10.0]], np.float32)
    init = np.array([0, 3])  # rows 0 and 3 are the same point: centroid 1 starts empty
    c, a = numpy_kmeans_from(x, init, iters=1)
    np.testing.assert_allclose(c, [[x.mean()], [10.0]], atol=1e-6)  # centroid 0 had every row
    np.testing.assert_array_equal(a, [0, 0, 0, 0, 0, 1])
    from jaxparadigm.retrieval.dense.kmeans import _lloyd

    got_c, got_a = _lloyd(jnp.asarray(x), jnp.asarray(x[init]), 1)
    np.testing.assert_allclose(np.asarray(got_c), c, atol=1e-6)
    np.testing.assert_array_equal(np.asarray(got_a), a)


def numpy_kmeans_from(x, init, iters):
    c = x[init].astype(np.float64)
    t = x.astype(np.float64)
    for _ in range(iters):
        a = np.argmin(((t[:, None] - c[None]) ** 2).sum(-1), 1)
        counts = np.bincount(a, minlength=len(c))
        new = np.zeros_like(c)
        np.add.at(new, a, t)
        new[counts > 0] /= counts[counts > 0, None]
        far = np.lexsort((np.arange(len(t)), -((t - c[a]) ** 2).sum(1)))
        new[counts == 0] = t[far[: int((counts == 0).sum())]]
        c = new
    return c, np.argmin(((t[:, None] - c[None]) ** 2).sum(-1), 1)


def test_seeded_and_deterministic_and_sampled():
    x = blobs(1, 3000, 8, centers=20)
    a = kmeans(x, 10, seed=3, iters=4, max_points_per_list=32)
    b = kmeans(x, 10, seed=3, iters=4, max_points_per_list=32)
    c = kmeans(x, 10, seed=4, iters=4, max_points_per_list=32)
    np.testing.assert_array_equal(a.centroids, b.centroids)
    assert not np.array_equal(a.centroids, c.centroids)
    assert a.train_rows == 320  # 32 points per list
    rows = training_rows(3000, 10, 3, 32)
    assert len(rows) == 320 and np.all(np.diff(rows) > 0)


def test_row_source_trains_like_the_array():
    x = blobs(2, 500, 8, centers=6)
    src = RowSource([x[:123], x[123:400], x[400:]])
    a = kmeans(x, 6, seed=1, iters=3, max_points_per_list=40)
    b = kmeans(src, 6, seed=1, iters=3, max_points_per_list=40)
    np.testing.assert_array_equal(a.centroids, b.centroids)


def test_lloyd_never_increases_the_within_list_distance():
    """Each Lloyd step (and each empty-cluster move) can only lower sum ||x_i - c_a(i)||^2."""
    x = blobs(7, 600, 8, centers=12, sigma=0.5)

    def inertia(c):
        return float(((x[:, None].astype(np.float64) - c[None]) ** 2).sum(-1).min(1).sum())

    seen = [inertia(kmeans(x, 10, seed=2, iters=i).centroids) for i in range(6)]
    assert all(b <= a * (1 + 1e-6) for a, b in zip(seen, seen[1:], strict=False)), seen
    assert seen[-1] < seen[0]


def test_separated_blobs_are_not_split_across_lists():
    """32 lists on 8 well-separated blobs: no list mixes two blobs."""
    rng = np.random.default_rng(0)
    mu = rng.standard_normal((8, 16)) * 4
    label = np.repeat(np.arange(8), 50)
    x = (mu[label] + 0.01 * rng.standard_normal((400, 16))).astype(np.float32)
    km = kmeans(x, 32, seed=0, iters=10)
    for j in range(32):
        assert len(set(label[km.assignment == j])) <= 1


class AssignTest(chex.TestCase):
    @chex.variants(with_jit=True, without_jit=True, with_device=True, without_device=True)
    @parameterized.parameters((1, 3), (5000, 7), (4096, 1))
    def test_nearest_equals_argmin_distance(self, n, lists):
        rng = np.random.default_rng(n)
        x = rng.standard_normal((n, 5)).astype(np.float32)
        c = rng.standard_normal((lists, 5)).astype(np.float32)
        got = self.variant(nearest)(x, c)
        chex.assert_shape(got, (n,))
        chex.assert_type(got, jnp.int32)
        d = ((x[:, None].astype(np.float64) - c[None]) ** 2).sum(-1)
        want = np.argmin(d, 1)
        close = np.sort(d, 1)[:, : min(2, lists)]
        clear = close[:, -1] - close[:, 0] > 1e-4 if lists > 1 else np.ones(n, bool)
        np.testing.assert_array_equal(np.asarray(got)[clear], want[clear])
        np.testing.assert_array_equal(np.asarray(assign(x, c)), np.asarray(got))

    def test_ties_go_to_the_lower_centroid(self):
        c = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]], np.float32)
        x = np.array([[1.0, 1.0], [2.0, 0.0]], np.float32)
        np.testing.assert_array_equal(np.asarray(assign(x, c)), [0, 0])


@pytest.mark.parametrize(
    "args, kw, match",
    [
        ((np.zeros(5, np.float32), 2), {}, "x: got"),
        ((np.zeros((5, 2), np.float32), 0), {}, "lists"),
        ((np.zeros((5, 2), np.float32), 6), {}, "at most the 5 rows"),
        ((np.zeros((5, 2), np.float32), 2), {"seed": -1}, "seed"),
        ((np.zeros((5, 2), np.float32), 2), {"iters": 1.5}, "iters"),
        ((np.zeros((5, 2), np.float32), 2), {"max_points_per_list": 0}, "max_points_per_list"),
        ((np.full((5, 2), np.nan, np.float32), 2), {}, "NaN"),
    ],
)
def test_bad_input_is_refused_naming_the_argument(args, kw, match):
    with pytest.raises(InputError, match=match):
        kmeans(*args, **kw)


# --- cases ported from FAISS's own k-means tests (facebookresearch/faiss, tests/test_clustering.py,
# TestClustering); our code, their scenarios -------------------------------------------------------


def _error(x, centroids):
    """Quantisation error: sum of squared distances to the nearest centroid (float64)."""
    d = ((x[:, None].astype(np.float64) - centroids[None].astype(np.float64)) ** 2).sum(-1)
    return float(d.min(1).sum())


def test_faiss_test_clustering_more_centroids_lower_error():
    """FAISS test_clustering: uniform data, 64 centroids quantise better than 32."""
    x = (np.random.RandomState(123).uniform(size=(1000, 64)) * 10).astype(np.float32)
    e32 = _error(x, kmeans(x, 32, iters=10).centroids)
    e64 = _error(x, kmeans(x, 64, iters=10).centroids)
    assert e32 > e64


def test_faiss_test_nasty_clustering_fewer_distinct_points_than_centroids():
    """FAISS test_nasty_clustering: 5 distinct points (20 copies each), 10 centroids asked: it
    trains (empty clusters handled), every row lands on a centroid at its own point."""
    rs = np.random.RandomState(123)
    x = np.zeros((100, 2), np.float32)
    for i in range(5):
        x[i * 20 : i * 20 + 20] = rs.uniform(size=2)
    km = kmeans(x, 10, iters=10)
    assert np.all(np.isfinite(km.centroids)) and km.assignment.shape == (100,)
    assert _error(x, km.centroids) < 1e-10  # a mean of 20 equal float32 values: within an ulp
    np.testing.assert_allclose(km.centroids[km.assignment], x, atol=1e-6)


def test_faiss_test_1ptpercluster_as_many_centroids_as_points():
    """FAISS test_1ptpercluster (faiss#842): 5 equal points, 5 centroids."""
    x = np.zeros((5, 10), np.float32)
    km = kmeans(x, 5, iters=10)
    assert np.all(km.centroids == 0.0) and set(km.assignment) <= set(range(5))


def test_the_default_is_ten_lloyd_iterations():
    """``iters`` defaults to 10 (the index build's k-means): on rows Lloyd has not settled by
    then (no cluster structure), the 11th iteration still moves a centroid."""
    x = np.random.default_rng(5).standard_normal((2000, 8)).astype(np.float32)
    default = kmeans(x, 32)
    np.testing.assert_array_equal(default.centroids, kmeans(x, 32, iters=10).centroids)
    assert not np.array_equal(default.centroids, kmeans(x, 32, iters=11).centroids)
