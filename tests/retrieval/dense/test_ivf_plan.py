"""The IVF batch plan (tiles of one chunk and a group of queries) against a brute-force oracle."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxparadigm.retrieval.dense.ivf_plan import (
    MIN_TILES_PER_SCAN,
    TILE_FIXED,
    TILE_QUERIES,
    bucket,
    count_tiles,
    plan_tiles,
    ranks,
    scans_for,
    tile_queries,
    tiles_per_step,
)


def layout(sizes, devices):
    """``(chunks_per_list, first_chunk, device_of, empty_chunk)`` of lists of ``sizes`` chunks
    split over ``devices`` in runs, as the searcher lays them out."""
    per = np.asarray(sizes, np.int64)
    device_of = np.minimum(devices * np.arange(len(per)) // max(len(per), 1), devices - 1)
    first = np.zeros(len(per), np.int64)
    held = []
    for d in range(devices):
        mine = np.flatnonzero(device_of == d)
        first[mine] = np.concatenate([[0], np.cumsum(per[mine])[:-1]]) if mine.size else []
        held.append(int(per[mine].sum()))
    return per, first, device_of, max(held)


@settings(max_examples=40, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 4), min_size=1, max_size=9),
    nq=st.integers(1, 12),
    group=st.sampled_from([1, 2, 3, 4, 16]),
    devices=st.integers(1, 3),
    scans=st.integers(1, 3),
    data=st.data(),
)
def test_every_probed_chunk_and_query_is_one_place(sizes, nq, group, devices, scans, data):
    lists = len(sizes)
    nprobe = data.draw(st.integers(1, lists))
    probed = np.stack(
        [data.draw(st.permutations(range(lists)))[:nprobe] for _ in range(nq)]
    ).astype(np.int64)
    per, first, device_of, empty = layout(sizes, devices)
    plan = plan_tiles(
        probed,
        group,
        chunks_per_list=per,
        first_chunk=first,
        device_of=device_of,
        devices=devices,
        empty_chunk=empty,
        scans=scans,
    )
    b = len(plan.tile_chunk) // devices
    assert b % (tiles_per_step(group) * scans) == 0
    assert plan.tile_query.shape == (devices * b, group)
    chunk = plan.tile_chunk.reshape(devices, b)
    query = plan.tile_query.reshape(devices, b, group)
    want, got = [], []  # (device, local chunk, query) of every pair, from the probes and the plan
    for i in range(nq):
        for j in probed[i]:
            want += [(device_of[j], first[j] + c, i) for c in range(per[j])]
    owner = {}  # (device, local chunk) -> list
    for j in range(lists):
        for c in range(per[j]):
            owner[(device_of[j], first[j] + c)] = j
    for d in range(devices):
        real = chunk[d] != empty
        assert np.all(np.diff(chunk[d][real]) >= 0)  # sorted by chunk
        assert np.all(query[d][~real] == nq)  # padding tiles hold no query
        for t in np.flatnonzero(real):
            members = query[d, t][query[d, t] < nq]
            assert len(members) >= 1 and np.all(np.diff(members) > 0)
            assert np.all(query[d, t][len(members) :] == nq)  # empty places at the end
            for i in members:
                assert owner[(d, chunk[d, t])] in probed[i]
                got.append((d, chunk[d, t], i))
        for i in range(nq):  # the query's slots are exactly its places on this device
            row = plan.slots[d * nq + i]
            places = {t * group + g for t in range(b) for g in range(group) if query[d, t, g] == i}
            assert set(row[row < b * group].tolist()) == places
            assert len(row[row < b * group]) == len(places)
            assert np.all(row[len(places) :] == b * group)
    assert sorted(got) == sorted(want)
    assert count_tiles(probed, group, per) == int(np.sum(plan.tile_chunk != empty))


def test_tile_queries_takes_the_cheapest_modelled_group():
    per = np.array([4, 4, 4, 4])
    assert tile_queries(np.array([[0, 1]]), per) == 1  # one query: a pair a tile
    assert tile_queries(np.tile([[0, 1]], (64, 1)), per) == 16  # every query on the same lists
    # 4 queries on list 0: G=1 costs 4*4*(F+1), G=4 costs 1*4*(F+4): cheaper once F > 0
    assert tile_queries(np.zeros((4, 1), np.int64), per) == 4
    costs = {g: -(-3 // g) * (TILE_FIXED + g) for g in TILE_QUERIES}  # 3 queries on one list
    best = min(TILE_QUERIES, key=lambda g: (costs[g], g))
    assert tile_queries(np.zeros((3, 1), np.int64), per) == best


def test_bucket_rounds_to_a_multiple_of_least():
    assert [bucket(n) for n in (1, 8, 9, 17, 100)] == [1, 8, 9, 18, 104]
    assert bucket(3, 8) == 8 and bucket(17, 8) == 24
    for least in (1, 2, 6, 16, 24):
        for n in range(0, 3000, 7):
            b = bucket(n, least)
            assert b % least == 0 and b >= max(n, 1) and b - n < max(n / 8, least) + least


def test_scans_split_only_work_worth_a_thread():
    m = MIN_TILES_PER_SCAN
    assert scans_for(0, 1, 2) == 1 and scans_for(2 * m - 1, 1, 2) == 1
    assert scans_for(2 * m, 1, 2) == 2 and scans_for(100 * m, 1, 2) == 2
    assert scans_for(4 * m, 2, 4) == 2 and scans_for(4 * m, 2, 1) == 1


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 6), max_size=8))
def test_ranks_number_each_item_within_its_group(counts):
    """``ranks([2, 0, 3]) = [0, 1, 0, 1, 2]``: by hand, group by group."""
    want = [r for c in counts for r in range(c)]
    np.testing.assert_array_equal(ranks(np.array(counts, np.int64)), want)
    assert ranks(np.array(counts, np.int64)).dtype == np.int64
