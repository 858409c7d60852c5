"""Generated broadcast shapes: ``jaxparadigm.tensor.broadcast_shapes`` vs ``np.broadcast_shapes``.

Issue 23, item 3c. Oracle: NumPy's result, or NumPy's ``ValueError`` (we must raise
``ValueError`` too, and ``explain_broadcast`` must print an ``incompatible`` line instead of a
result). Classes as in ``tests/differential_classes.py``; no documented refusals.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given

from jaxparadigm.tensor import broadcast_shapes, explain_broadcast
from tests.differential_classes import (
    EQUAL,
    RAISED,
    SILENT,
    Tally,
    default_settings,
    long_settings,
)
from tests.tensor.broadcast_generator import broadcast_cases


def check_case(shapes: list, tally: Tally) -> None:
    """Run one case through both and record its class (3 comparisons: result, error, table)."""
    try:
        want = tuple(np.broadcast_shapes(*shapes))
    except ValueError as err:
        want = err
    try:
        got = broadcast_shapes(*shapes)
    except ValueError as err:
        got = err
    except Exception as err:  # noqa: BLE001 - any other exception is a class of its own
        tally.record(RAISED, f"{shapes!r}: {type(err).__name__}: {err}")
        return
    detail = f"shapes {shapes!r}: ours {got!r}, numpy {want!r}"
    if isinstance(want, ValueError):
        if isinstance(got, ValueError):
            negative = any(np.any(np.asarray(s) < 0) for s in shapes)
            table_ok = negative or "incompatible" in explain_broadcast(*shapes)
            tally.record(EQUAL if table_ok else SILENT, detail + " (table)")
        else:
            tally.record(SILENT, detail)
        return
    if isinstance(got, ValueError):
        tally.record(RAISED, detail)
        return
    table = explain_broadcast(*shapes).splitlines()[-1]
    same_table = table.split()[1:] == [str(n) for n in want]
    tally.record(EQUAL if got == want and same_table else SILENT, detail)


def _run(profile) -> None:
    tally = Tally("broadcast")

    @profile
    @given(shapes=broadcast_cases())
    def run(shapes):
        tally.example()
        check_case(shapes, tally)

    run()
    tally.finish()


def test_generated_broadcast_matches_numpy():
    _run(default_settings(400))


@pytest.mark.slow
def test_generated_broadcast_matches_numpy_long():
    _run(long_settings(20_000))


@pytest.mark.parametrize(
    "shapes",
    [
        [(0,), (1,)],  # an empty dim broadcasts against 1 only
        [(2, 0), (3, 1, 1)],
        [np.asarray([3, 1]), 4],
        [()],
        [(3, -1), (3, 1)],  # negative dims: numpy refuses, so do we
    ],
)
def test_regression_shapes(shapes):
    tally = Tally("broadcast regression")
    check_case(shapes, tally)
    assert tally.counts[EQUAL] == 1
