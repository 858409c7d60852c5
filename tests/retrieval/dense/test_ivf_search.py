"""IVF search (issue 38): the scan of the probed lists against a numpy oracle.

The oracle of a partial search is the exact top-k *of the rows in the probed lists* (the lists
whose centroids score best by ``q . c - ||c||^2 / 2``), ties to the lower row id: the contract
the module documents ("exact whenever the true top-k lies in the probed lists" follows). With
``nprobe = lists`` that is the exact search over every row.
"""

import jax
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from jaxparadigm.errors import InputError
from jaxparadigm.retrieval.dense.ivf_plan import bucket as _bucket
from jaxparadigm.retrieval.dense.ivf_search import (
    HOST_QUERIES,
    IVFSearcher,
    _chunk_rows,
    check_nprobe,
    default_nprobe,
)
from jaxparadigm.retrieval.dense.kmeans import kmeans, nearest


def unit(rng, n, d):
    x = rng.standard_normal((n, d)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def lay_out(x, centroids):
    """The inverted lists of rows ``x`` for ``centroids`` (rows in row order within a list)."""
    a = np.asarray(nearest(x, centroids))
    ids = np.argsort(a, kind="stable")
    offsets = np.concatenate([[0], np.cumsum(np.bincount(a, minlength=len(centroids)))])
    return offsets, ids, x[ids]


def oracle(x, centroids, offsets, ids, q, k, nprobe):
    """float64 exact top-k of the rows of each query's nprobe best lists (ties: lower row)."""
    half = 0.5 * (centroids.astype(np.float64) ** 2).sum(1)
    out_s = np.full((len(q), k), -np.inf)
    out_i = np.full((len(q), k), -1)
    for i, qi in enumerate(q.astype(np.float64)):
        cs = qi @ centroids.T.astype(np.float64) - half
        probed = np.argsort(-cs, kind="stable")[:nprobe]
        rows = np.sort(np.concatenate([ids[offsets[j] : offsets[j + 1]] for j in probed]))
        # an elementwise product and a row sum: equal rows score equal (a float64 BLAS
        # matrix-vector product may give two equal rows scores an ulp apart)
        s = (x[rows].astype(np.float64) * qi).sum(1)
        best = np.lexsort((rows, -s))[:k]
        out_s[i, : len(best)], out_i[i, : len(best)] = s[best], rows[best]
    return out_s, out_i


def check(searcher, x, centroids, offsets, ids, q, k, nprobe):
    """Both scans against the oracle: the device's tiles (``host_queries`` 0) and the host's
    (``host_queries`` the batch), which give the same ids and bitwise the same scores."""
    want_s, want_i = oracle(x, centroids, offsets, ids, q, k, nprobe)
    got = {}
    for host in (0, len(q)):
        searcher.host_queries = host
        got[host] = searcher.search(q, k, nprobe)
        np.testing.assert_array_equal(got[host].ids, want_i)
        np.testing.assert_allclose(got[host].scores, want_s, atol=2e-6)
        assert got[host].ids.dtype == np.int64 and got[host].scores.dtype == np.float32
        assert got[host].ids.shape == (len(q), k)
    np.testing.assert_array_equal(got[0].scores, got[len(q)].scores)


@settings(max_examples=15, deadline=None)
@example(n=6, lists=1, k=3, n_dev=1, chunk=None, dup=True, seed=1)  # equal rows 2 and 5: an
# oracle scoring by a BLAS matrix-vector product put 5 first (its float64 scores an ulp apart)
@given(
    n=st.integers(1, 400),
    lists=st.integers(1, 12),
    k=st.integers(1, 15),
    n_dev=st.sampled_from([1, 2, 4]),
    chunk=st.sampled_from([None, 1, 3, 16]),
    dup=st.booleans(),
    seed=st.integers(0, 1000),
)
def test_every_list_probed_equals_exact_search(n, lists, k, n_dev, chunk, dup, seed):
    rng = np.random.default_rng(seed)
    x = unit(rng, n, 8)
    if dup:  # exact duplicates: ties across lists and chunks go to the lower row
        x[n // 2 :] = x[: n - n // 2]
    lists = min(lists, n)
    centroids = x[rng.choice(n, lists, replace=False)]
    offsets, ids, rows = lay_out(x, centroids)
    s = IVFSearcher(centroids, offsets, ids, rows, devices=jax.devices()[:n_dev], chunk_rows=chunk)
    q = np.concatenate([x[rng.integers(0, n, 2)], unit(rng, 3, 8)])
    check(s, x, centroids, offsets, ids, q, k, lists)


@settings(max_examples=15, deadline=None)
@given(
    n=st.integers(20, 600),
    lists=st.integers(2, 24),
    k=st.integers(1, 12),
    nprobe=st.integers(1, 6),
    n_dev=st.sampled_from([1, 3]),
    seed=st.integers(0, 1000),
)
def test_partial_probe_is_the_exact_top_k_of_the_probed_lists(n, lists, k, nprobe, n_dev, seed):
    rng = np.random.default_rng(seed)
    x = unit(rng, n, 6)
    lists = min(lists, n)
    centroids = kmeans(x, lists, seed=seed, iters=3).centroids
    offsets, ids, rows = lay_out(x, centroids)
    nprobe = min(nprobe, lists)
    s = IVFSearcher(centroids, offsets, ids, rows, devices=jax.devices()[:n_dev])
    q = np.concatenate([unit(rng, 6, 6), x[:2]])
    check(s, x, centroids, offsets, ids, q, k, nprobe)


def test_a_tie_at_the_kth_place_goes_to_the_lower_row_across_lists_and_devices():
    """Twelve copies of one row spread over three lists (and two devices): the k-th place is
    decided by row id, not by which list or chunk was scanned first."""
    rng = np.random.default_rng(3)
    x = unit(rng, 60, 4)
    x[[7, 13, 19, 31, 37, 41, 43, 47, 53, 55, 57, 59]] = x[1]
    centroids = x[[1, 2, 3]]
    offsets, ids, rows = lay_out(x, centroids)
    # put the copies in every list: rewrite the layout by hand, rows in row order per list
    a = np.arange(60) % 3
    ids = np.argsort(a, kind="stable")
    offsets = np.array([0, 20, 40, 60])
    for devices, chunk in [(1, 4), (2, 4), (3, 7), (2, 64)]:
        for host in (0, 1):  # the device's scan, the host's
            s = IVFSearcher(
                centroids,
                offsets,
                ids,
                x[ids],
                devices=jax.devices()[:devices],
                chunk_rows=chunk,
                host_queries=host,
            )
            got = s.search(x[[1]], 5, 3)
            np.testing.assert_array_equal(got.ids, [[1, 7, 13, 19, 31]])


def test_fewer_rows_than_k_are_padded_with_minus_one():
    rng = np.random.default_rng(0)
    x = unit(rng, 10, 4)
    centroids = np.array([[1, 0, 0, 0], [-1, 0, 0, 0]], np.float32)
    offsets, ids, rows = lay_out(x, centroids)
    for host in (0, 1):
        s = IVFSearcher(centroids, offsets, ids, rows, host_queries=host)
        got = s.search(np.array([[1, 0, 0, 0]], np.float32), 10, 1)
        size = int(np.diff(offsets)[0])
        assert np.all(got.ids[0, :size] >= 0) and np.all(got.ids[0, size:] == -1)
        assert np.all(np.isneginf(got.scores[0, size:]))
    assert set(got.ids[0, :size]) == set(ids[: offsets[1]])


def test_clustered_recall_at_the_default_nprobe():
    """Rows around 64 centres, 64 lists, the default nprobe (11: lists holding 1,024 rows of
    6,000): recall@10 >= 0.95 against the
    exact search; every result's score is its row's true score."""
    rng = np.random.default_rng(1)
    mu = unit(rng, 64, 32)
    x = mu[rng.integers(0, 64, 6000)] + 0.08 * rng.standard_normal((6000, 32)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    km = kmeans(x, 64, seed=0, iters=8)
    offsets, ids, rows = lay_out(x, km.centroids)
    q = x[rng.choice(6000, 50, replace=False)] + 0.05 * rng.standard_normal((50, 32)).astype(
        np.float32
    )
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    s = IVFSearcher(km.centroids, offsets, ids, rows)
    nprobe = default_nprobe(64, 6000)
    got = s.search(q, 10, nprobe)
    exact = np.argsort(-(q @ x.T), axis=1, kind="stable")[:, :10]
    recall = np.mean([len(set(g) & set(w)) / 10 for g, w in zip(got.ids, exact, strict=True)])
    assert nprobe == 11 and recall >= 0.95, recall
    np.testing.assert_allclose(got.scores, np.take_along_axis(q @ x.T, got.ids, 1), atol=2e-6)
    one = s.search(q, 10, 1)  # fewer lists, lower recall: the probe matters
    r1 = np.mean([len(set(g) & set(w)) / 10 for g, w in zip(one.ids, exact, strict=True)])
    assert r1 < recall


def test_batched_queries_equal_one_at_a_time():
    rng = np.random.default_rng(2)
    x = unit(rng, 500, 8)
    centroids = kmeans(x, 16, iters=3).centroids
    offsets, ids, rows = lay_out(x, centroids)
    s = IVFSearcher(centroids, offsets, ids, rows, devices=jax.devices()[:2])
    q = unit(rng, 9, 8)
    batch = s.search(q, 7, 3)
    for i in range(9):
        one = s.search(q[i : i + 1], 7, 3)
        np.testing.assert_array_equal(one.ids[0], batch.ids[i])


def test_default_nprobe_and_shape_buckets():
    assert [default_nprobe(n, 10**6) for n in (1, 15, 16, 17, 1024)] == [1, 1, 1, 2, 64]
    assert default_nprobe(58, 2308) == 26  # a small index: lists holding 1,024 rows
    assert default_nprobe(8, 300) == 8 and default_nprobe(1024, 1024 * 1024) == 64
    assert [_bucket(n) for n in (1, 8, 9, 17, 100)] == [1, 8, 9, 18, 104]
    assert all(0 <= _bucket(n) - n < max(n / 8, 1) for n in range(1, 5000))
    assert _bucket(3, 8) == 8 and _bucket(17, 8) == 24
    assert [_chunk_rows(1000, 100), _chunk_rows(10**6, 1024), _chunk_rows(0, 4)] == [16, 256, 16]


@pytest.mark.parametrize("nprobe", [0, 5, -1, True, 2.0, "2", None])
def test_bad_nprobe_is_refused_naming_it(nprobe):
    with pytest.raises(InputError, match="nprobe"):
        check_nprobe(nprobe, 4, "idx")
    rng = np.random.default_rng(0)
    x = unit(rng, 20, 4)
    offsets, ids, rows = lay_out(x, x[:4])
    with pytest.raises((InputError, TypeError), match="nprobe"):
        IVFSearcher(x[:4], offsets, ids, rows).search(x[:1], 3, nprobe)


@pytest.mark.parametrize("k", [0, -1, True, 2.0, None])
def test_bad_k_is_refused_naming_it(k):
    rng = np.random.default_rng(0)
    x = unit(rng, 20, 4)
    offsets, ids, rows = lay_out(x, x[:4])
    with pytest.raises((InputError, TypeError), match="k: got"):
        IVFSearcher(x[:4], offsets, ids, rows).search(x[:1], k, 2)


def test_equal_rows_in_different_chunks_tie_to_the_lower_row():
    """Found by hypothesis: row 16 equals row 7 but sits at another place of another chunk; the
    float32 scan may score them an ulp apart, yet the lower row must win the tie (the host
    rescoring in float64 scores equal rows equally)."""
    rng = np.random.default_rng(12)
    x = unit(rng, 19, 8)
    x[9:] = x[:10]
    offsets, ids, rows = lay_out(x, x[:1])
    s = IVFSearcher(x[:1], offsets, ids, rows)
    for k in (1, 2, 3):
        check(s, x, x[:1], offsets, ids, x[[7, 16, 3]], k, 1)
    got = s.search(x[[7]], 2, 1)
    assert got.ids.tolist() == [[7, 16]] and got.scores[0, 0] == got.scores[0, 1]


@settings(max_examples=8, deadline=None)
@given(
    n=st.integers(1, 300),
    lists=st.integers(1, 10),
    k=st.integers(1, 12),
    group=st.sampled_from([2, 4, 16]),
    scans=st.sampled_from([1, 2, 3]),
    n_dev=st.sampled_from([1, 2]),
    chunk=st.sampled_from([None, 1, 5]),
    nq=st.integers(1, 24),
    seed=st.integers(0, 1000),
)
def test_list_major_equals_row_major_equals_exact(
    n, lists, k, group, scans, n_dev, chunk, nq, seed
):
    """Tiles of ``group`` queries (list-major, split over ``scans`` loops) and of one query
    (row-major, one loop) give the same ids and scores, and with every list probed both are the
    exact search; queries repeat rows and each other so that lists are probed by several queries
    and ties cross tiles."""
    rng = np.random.default_rng(seed)
    x = unit(rng, n, 8)
    x[n // 2 :] = x[: n - n // 2]  # equal rows: ties to the lower row across lists and tiles
    lists = min(lists, n)
    centroids = x[rng.choice(n, lists, replace=False)]
    offsets, ids, rows = lay_out(x, centroids)
    devices = jax.devices()[:n_dev]
    major = IVFSearcher(
        centroids, offsets, ids, rows, devices=devices, chunk_rows=chunk, tile_queries=group
    )
    minor = IVFSearcher(
        centroids, offsets, ids, rows, devices=devices, chunk_rows=chunk, tile_queries=1
    )
    q = np.concatenate([x[rng.integers(0, n, nq)], unit(rng, 2, 8)])
    q[nq // 2 :: 3] = q[0]  # the same query several times in one batch
    for nprobe in sorted({lists, max(1, lists // 2)}):
        a, b = major.search(q, k, nprobe), minor.search(q, k, nprobe)
        np.testing.assert_array_equal(a.ids, b.ids)
        np.testing.assert_array_equal(a.scores, b.scores)
    check(major, x, centroids, offsets, ids, q, k, lists)


@pytest.mark.parametrize("name", ["tile_queries", "scans"])
def test_tile_queries_and_scans_are_checked(name):
    rng = np.random.default_rng(0)
    x = unit(rng, 20, 4)
    offsets, ids, rows = lay_out(x, x[:4])
    for bad in (0, -1, 2.0, True):
        with pytest.raises((InputError, TypeError), match=name):
            IVFSearcher(x[:4], offsets, ids, rows, **{name: bad})


def test_list_major_in_two_scans_equals_row_major_and_exact_on_shared_lists():
    """The default run's case of the hypothesis test above: 40 queries on 6 lists (each list
    probed by many queries, so tiles hold 4), equal rows across lists, two devices."""
    rng = np.random.default_rng(7)
    x = unit(rng, 240, 8)
    x[120:] = x[:120]
    centroids = x[rng.choice(240, 6, replace=False)]
    offsets, ids, rows = lay_out(x, centroids)
    kw = {"devices": jax.devices()[:2], "chunk_rows": 8}
    major = IVFSearcher(centroids, offsets, ids, rows, tile_queries=4, scans=2, **kw)
    minor = IVFSearcher(centroids, offsets, ids, rows, tile_queries=1, scans=1, **kw)
    q = x[rng.integers(0, 240, 40)]
    for nprobe in (2, 6):
        a, b = major.search(q, 9, nprobe), minor.search(q, 9, nprobe)
        np.testing.assert_array_equal(a.ids, b.ids)
        np.testing.assert_array_equal(a.scores, b.scores)
        check(major, x, centroids, offsets, ids, q, 9, nprobe)


def test_a_small_batch_takes_the_host_scan_and_a_larger_one_the_device_scan(monkeypatch):
    """Up to HOST_QUERIES queries: host_candidates (one call a batch); one more: the tiles (the
    device scan), whose chunks are placed on the devices then, not before."""
    import jaxparadigm.retrieval.dense.ivf_search as ivf

    rng = np.random.default_rng(5)
    x = unit(rng, 200, 8)
    centroids = kmeans(x, 8, seed=0, iters=3).centroids
    offsets, ids, rows = lay_out(x, centroids)
    s = IVFSearcher(centroids, offsets, ids, rows)
    assert s.host_queries == HOST_QUERIES >= 1
    calls = []
    real = ivf.host_candidates
    monkeypatch.setattr(ivf, "host_candidates", lambda *a: calls.append(1) or real(*a))
    q = x[rng.integers(0, len(x), HOST_QUERIES + 1)]
    small = s.search(q[:HOST_QUERIES], 3, 2)
    assert len(calls) == 1
    assert s._placed is None  # host scans only: the rows' device copy was never made
    s.search(q, 3, 2)
    assert len(calls) == 1
    placed = s._placed
    assert placed is not None and s.placed_chunks() is placed  # made once, by the device scan
    s.host_queries = 0  # the same batch on the device: the same ids and scores
    again = s.search(q[:HOST_QUERIES], 3, 2)
    np.testing.assert_array_equal(again.ids, small.ids)
    np.testing.assert_array_equal(again.scores, small.scores)
    with pytest.raises(InputError, match="host_queries"):
        IVFSearcher(centroids, offsets, ids, rows, host_queries=-1)


def test_chunk_layout_holds_each_row_once_and_pads_with_minus_one():
    """The device layout: every row id once, in its list's chunks on its device, and every other
    slot (a list's last chunk's tail, each device's spare chunk) padding with id -1."""
    rng = np.random.default_rng(11)
    x = unit(rng, 50, 8)
    centroids = kmeans(x, 4, seed=0, iters=2).centroids
    offsets, ids, rows = lay_out(x, centroids)
    s = IVFSearcher(centroids, offsets, ids, rows, devices=jax.devices()[:2], chunk_rows=3)
    got = np.asarray(s.placed_chunks()[1])
    live = got[got != -1]
    assert sorted(live.tolist()) == sorted(ids.tolist())  # each row once, the rest exactly -1
    per_list = -(-np.diff(offsets) // 3)
    assert got.size == len(s.devices) * 3 * (
        max(int(per_list[s.device_of == d].sum()) for d in range(len(s.devices))) + 1
    )
    assert np.all(got.reshape(len(s.devices), -1, 3)[:, -1] == -1)  # each device's spare chunk


def test_an_empty_batch_gets_empty_results():
    rng = np.random.default_rng(2)
    x = unit(rng, 30, 8)
    centroids = kmeans(x, 3, seed=0, iters=2).centroids
    offsets, ids, rows = lay_out(x, centroids)
    got = IVFSearcher(centroids, offsets, ids, rows).search(np.zeros((0, 8), np.float32), 4, 2)
    assert got.ids.shape == got.scores.shape == (0, 4)
    assert got.ids.dtype == np.int64 and got.scores.dtype == np.float32
