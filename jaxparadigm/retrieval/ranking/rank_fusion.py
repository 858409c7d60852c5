"""Reciprocal rank fusion: one ranking from several, e.g. BM25 and dense retrieval (C1.1).

Cormack, Clarke and Buettcher (SIGIR 2009). For rankings ``R_1 .. R_m`` (best first) and an item
``x`` at 1-based rank ``r_j(x)`` in ``R_j``:

    RRF(x) = sum over the rankings j that hold x of 1 / (k + r_j(x))          (k = 60)

An item missing from a ranking adds nothing for it. Items are returned by descending ``RRF``;
equal scores keep the order in which the items were first met reading ``R_1`` best to worst,
then ``R_2``, and so on (so a tie between a dense and a keyword hit goes to the first ranking).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TypeVar

from jaxparadigm.errors import require_int

__all__ = ["reciprocal_rank_fusion"]

T = TypeVar("T", bound=Hashable)


def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[T]], k: int = 60, top: int | None = None
) -> list[tuple[T, float]]:
    """``[(item, RRF score)]`` best first over the union of ``rankings`` (module docstring); at most
    ``top`` of them when given. An item may appear at most once in each ranking."""
    if isinstance(rankings, str) or not isinstance(rankings, Sequence):
        raise TypeError(f"rankings: got {type(rankings).__name__}, expected a list of rankings")
    if len(rankings) == 0:
        raise ValueError("rankings: got an empty list, expected at least one ranking")
    k = require_int("k", k, 0)
    if top is not None:
        top = require_int("top", top, 1)
    score: dict[T, float] = {}
    for j, ranking in enumerate(rankings):
        if isinstance(ranking, str) or not isinstance(ranking, Sequence):
            raise TypeError(
                f"rankings[{j}]: got {type(ranking).__name__}, expected a list of items"
            )
        if len(set(ranking)) != len(ranking):
            dup = next(x for i, x in enumerate(ranking) if x in ranking[:i])
            raise ValueError(
                f"rankings[{j}]: item {dup!r} appears twice, expected each at most once"
            )
        for rank, item in enumerate(ranking, start=1):
            score[item] = score.get(item, 0.0) + 1.0 / (k + rank)
    fused = sorted(score.items(), key=lambda pair: -pair[1])  # stable: ties keep first-met order
    return fused if top is None else fused[:top]
