"""Ranking metrics (C1.1) against hand-computed values."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxparadigm.retrieval.ranking_metrics import (
    first_hit_rank,
    mean_reciprocal_rank,
    ranking_from_scores,
    recall_at_k,
)


def test_first_hit_rank():
    assert first_hit_rank([5, 3, 9], {9, 3}) == 2
    assert first_hit_rank([5, 3], {7}) is None
    with pytest.raises(ValueError, match="relevant"):
        first_hit_rank([1], set())


def test_recall_and_mrr_by_hand():
    ranks = [1, 3, None, 6]
    assert recall_at_k(ranks, 1) == 0.25
    assert recall_at_k(ranks, 5) == 0.5
    assert mean_reciprocal_rank(ranks) == pytest.approx((1 + 1 / 3 + 0 + 1 / 6) / 4)


@pytest.mark.parametrize("ranks, k", [([], 1), ([0], 1), ([1], 0), ([True], 1)])
def test_bad_input(ranks, k):
    with pytest.raises(ValueError):
        recall_at_k(ranks, k)


def test_ranking_from_scores_is_stable():
    np.testing.assert_array_equal(ranking_from_scores(np.array([0.1, 0.5, 0.5, 0.2])), [1, 2, 3, 0])
    with pytest.raises(ValueError, match="1-D"):
        ranking_from_scores(np.zeros((2, 2)))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.one_of(st.none(), st.integers(1, 20)), min_size=1, max_size=30))
def test_recall_is_monotone_in_k_and_bounds_mrr(ranks):
    r = [recall_at_k(ranks, k) for k in (1, 5, 20)]
    assert r[0] <= r[1] <= r[2] <= 1.0
    assert r[0] <= mean_reciprocal_rank(ranks) <= r[2]
