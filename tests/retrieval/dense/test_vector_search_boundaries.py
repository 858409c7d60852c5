"""Vector search at its edges (issue 39): exactly ``k`` columns from a compact dtype's rescoring,
queries given in another dtype, and the scan-block rule at its exact limit.

Each test names the boundary it pins; each killed a one-line mutant of ``vector_search.py`` that
the earlier tests let through (``make mutation MODULE=retrieval.vector_search``).
"""

import numpy as np
import pytest

from jaxparadigm.retrieval.dense.vector_search import (
    _GROUP,
    _SCORE_BLOCK,
    RowSource,
    VectorSearcher,
    _scan_rows,
)
from tests.retrieval.dense.test_vector_search import unit


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "int8"])
@pytest.mark.parametrize("k", [1, 5, 64, 65])
def test_exactly_k_columns_of_float32_scores(dtype, k):
    """Boundary: k = 1, k below the row count, k exactly the row count, k one past it (capped).
    The compact dtypes rescore ``k * rescore_factor`` candidates and keep ``k`` of them."""
    rng = np.random.default_rng(3)
    x, q = unit(rng, 64, 16), unit(rng, 3, 16)
    got = VectorSearcher(RowSource([x]), dtype=dtype, block_rows=16).search(q, k)
    kept = min(k, 64)
    assert got.ids.shape == (3, kept) and got.scores.shape == (3, kept)
    assert got.ids.dtype == np.int64 and got.scores.dtype == np.float32
    assert all(len(set(row)) == kept for row in got.ids.tolist())


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "int8"])
@pytest.mark.parametrize("given", [np.float64, np.float16, "list"])
def test_queries_in_another_dtype_are_searched_as_float32(dtype, given):
    rng = np.random.default_rng(4)
    x, q = unit(rng, 200, 16), unit(rng, 4, 16)
    q = q.astype(np.float16).astype(np.float32)  # exactly representable in every given dtype
    searcher = VectorSearcher(RowSource([x]), dtype=dtype, block_rows=32)
    want = searcher.search(q, 7)
    other = q.tolist() if given == "list" else q.astype(given)
    got = searcher.search(other, 7)
    assert got.scores.dtype == np.float32
    np.testing.assert_array_equal(got.ids, want.ids)
    np.testing.assert_array_equal(got.scores, want.scores)


@pytest.mark.parametrize(
    "block_rows, q, rows",
    [
        (8192, 1, 8192),
        (8192, 32, 8192),  # 32 * 8192 == _SCORE_BLOCK exactly: not halved
        (8192, 33, 4096),  # one query more: halved once
        (8192, 64, 4096),
        (8192, 65, 2048),
        (16384, 64, 4096),
        (24, 100000, 24),  # 24 is not a multiple of 16: never halved (would leave a partial group)
        (48, 100000, 24),  # 48 -> 24, then stops: 24 % 16 != 0
        (16, 100000, 8),  # 16 -> 8 = _GROUP, then stops
    ],
)
def test_scan_rows_halves_to_the_score_block_keeping_whole_groups(block_rows, q, rows):
    """The rule in ``_scan_rows``'s docstring, at its limits: halve while ``q * rows`` exceeds
    ``_SCORE_BLOCK`` and the halved rows stay a multiple of ``_GROUP``; always a divisor."""
    assert _SCORE_BLOCK == 32 * 8192 and _GROUP == 8
    got = _scan_rows(block_rows, q)
    assert got == rows and block_rows % got == 0 and got % _GROUP == 0


def test_float64_queries_search_as_float32_with_x64_enabled():
    """Boundary: a process that enabled 64-bit JAX keeps float64 queries float64 on the device
    unless they are cast first: the scores must still be float32 and the same."""
    import jax

    rng = np.random.default_rng(5)
    x, q = unit(rng, 50, 8), rng.standard_normal((2, 8))
    with jax.enable_x64(True):
        searcher = VectorSearcher(RowSource([x]), block_rows=16)
        got, want = searcher.search(q, 3), searcher.search(q.astype(np.float32), 3)
    assert got.scores.dtype == np.float32
    np.testing.assert_array_equal(got.ids, want.ids)
    np.testing.assert_array_equal(got.scores, want.scores)
