"""Ranking metrics for labelled queries: recall@k and mean reciprocal rank (C1.1).

For one query with relevant set ``R`` and a ranking ``r_1, r_2, ...`` (best first), the rank of the
first hit is ``rho = min{i : r_i in R}`` (``None`` when no relevant item is ranked at all). Over
queries: ``recall@k = mean[rho <= k]`` and ``MRR = mean[1 / rho]`` with ``1/None = 0``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from jaxparadigm.common.numbers import check_int
from jaxparadigm.errors import require_int

__all__ = ["first_hit_rank", "recall_at_k", "mean_reciprocal_rank", "ranking_from_scores"]


def first_hit_rank(ranking: Sequence, relevant: Iterable) -> int | None:
    """1-based position of the first item of ``ranking`` that is in ``relevant``, else ``None``."""
    rel = set(relevant)
    if not rel:
        raise ValueError("relevant: got an empty set, expected at least one relevant item")
    for i, item in enumerate(ranking, start=1):
        if item in rel:
            return i
    return None


def _check_ranks(ranks: Sequence[int | None]) -> None:
    if len(ranks) == 0:
        raise ValueError("ranks: got an empty list, expected one rank (or None) per query")
    for i, r in enumerate(ranks):
        if r is not None:
            check_int(f"ranks[{i}]", r, 1, error=ValueError, expected="None or an int")


def recall_at_k(ranks: Sequence[int | None], k: int) -> float:
    """Fraction of queries whose first relevant item is within the top ``k``: ``mean[rho <= k]``."""
    _check_ranks(ranks)
    k = require_int("k", k, 1)
    return float(np.mean([r is not None and r <= k for r in ranks]))


def mean_reciprocal_rank(ranks: Sequence[int | None]) -> float:
    """``mean[1 / rho]`` over queries, counting an unranked query as 0."""
    _check_ranks(ranks)
    return float(np.mean([0.0 if r is None else 1.0 / r for r in ranks]))


def ranking_from_scores(scores: np.ndarray) -> np.ndarray:
    """Item indices by descending score; ties keep index order (a stable sort of ``-scores``)."""
    scores = np.asarray(scores)
    if scores.ndim != 1:
        raise ValueError(f"scores: got shape {scores.shape}, expected a 1-D array")
    return np.argsort(-scores, kind="stable")
