"""Ranking metrics (C1.1) against hand-computed values."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxparadigm.retrieval.eval.ranking_metrics import (
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


@pytest.mark.parametrize(
    "call, message",
    [
        (
            lambda: first_hit_rank([1], set()),
            "relevant: got an empty set, expected at least one relevant item",
        ),
        (
            lambda: recall_at_k([], 1),
            "ranks: got an empty list, expected one rank (or None) per query",
        ),
        (
            lambda: mean_reciprocal_rank([2, None, 0]),
            "ranks[2]: got 0, expected None or an int >= 1",
        ),
        (lambda: mean_reciprocal_rank([1.0]), "ranks[0]: got 1.0, expected None or an int >= 1"),
        (lambda: recall_at_k([1], True), "k: got True, expected an int >= 1"),
        (lambda: recall_at_k([1], 2.0), "k: got 2.0, expected an int >= 1"),
        (
            lambda: ranking_from_scores(np.zeros((2, 2))),
            "scores: got shape (2, 2), expected a 1-D array",
        ),
    ],
)
def test_errors_name_argument_value_and_expectation(call, message):
    with pytest.raises(ValueError) as info:
        call()
    assert str(info.value) == message


def test_ranking_from_scores_keeps_index_order_among_many_ties():
    """Python's ``sorted`` is stable: the independent oracle for "ties keep index order". Many ties
    over thousands of items: NumPy's default (introsort) argsort breaks this order."""
    scores = np.random.default_rng(0).integers(0, 3, 5000).astype(np.float32)
    expected = sorted(range(scores.size), key=lambda i: -scores[i])
    np.testing.assert_array_equal(ranking_from_scores(scores), expected)
