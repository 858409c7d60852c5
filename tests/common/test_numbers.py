"""The one number check (check_int, check_float, range_text): exact messages, NumPy scalars taken,
bools refused, NaN refused where a range is asked, the caller's exception types kept."""

import math

import numpy as np
import pytest

from jaxparadigm.common.errors import InputError
from jaxparadigm.common.numbers import check_float, check_int, is_real, number_text, range_text
from jaxparadigm.errors import require_int


@pytest.mark.parametrize(
    "value, want",
    [(5, 5), (np.int64(5), 5), (np.int32(7), 7), (np.uint8(3), 3), (10**30, 10**30)],
)
def test_python_and_numpy_integers_are_ints(value, want):
    got = check_int("k", value, 1)
    assert got == want and type(got) is int


@pytest.mark.parametrize(
    "value, shown",
    [
        (True, "True"),
        (np.bool_(True), "np.True_"),
        (2.0, "2.0"),
        (np.float64(2.0), "np.float64(2.0)"),
        ("5", "'5'"),
        (None, "None"),
        (np.array(5), "array(5)"),
    ],
)
def test_what_is_not_an_int_is_refused_by_type(value, shown):
    with pytest.raises(InputError) as err:
        check_int("k", value, 1, 10)
    assert str(err.value) == f"k: got {shown}, expected an int in [1, 10]"
    with pytest.raises(TypeError) as err:
        check_int("k", value, 1, error=ValueError, type_error=TypeError)
    assert (
        type(err.value) is TypeError and str(err.value) == f"k: got {shown}, expected an int >= 1"
    )


@pytest.mark.parametrize(
    "lo, hi, value, want",
    [
        (1, None, 0, "k: got 0, expected an int >= 1"),
        (None, 5, 6, "k: got 6, expected an int <= 5"),
        (1, 5, 6, "k: got 6, expected an int in [1, 5]"),
        (1, 5, np.int64(0), "k: got np.int64(0), expected an int in [1, 5]"),
    ],
)
def test_an_int_out_of_range_names_the_range(lo, hi, value, want):
    with pytest.raises(ValueError) as err:
        check_int("k", value, lo, hi, error=ValueError, type_error=TypeError)
    assert type(err.value) is ValueError and str(err.value) == want


def test_both_bounds_are_inclusive():
    assert check_int("k", 1, 1, 5) == 1 and check_int("k", 5, 1, 5) == 5
    assert check_int("k", -3) == -3  # no bound: any int
    assert check_float("x", 0.0, 0.0, 1.0) == 0.0 and check_float("x", 1, 0.0, 1.0) == 1.0


def test_require_int_is_the_int_check_raising_input_error():
    assert require_int is check_int
    assert require_int("k", np.int64(5), 1) == 5
    with pytest.raises(InputError, match=r"^k: got True, expected an int >= 1$"):
        require_int("k", True, 1)


@pytest.mark.parametrize(
    "value, want",
    [
        (0.5, 0.5),
        (np.float32(0.5), 0.5),
        (np.float64(0.25), 0.25),
        (2, 2.0),
        (np.int64(3), 3.0),
        (np.array(0.75), 0.75),
    ],
)
def test_real_numbers_of_every_kind_are_floats(value, want):
    got = check_float("x", value, 0, 10)
    assert got == want and type(got) is float


@pytest.mark.parametrize(
    "value, kwargs, want",
    [
        (float("nan"), {}, "x: got nan, expected a finite number"),
        (float("inf"), {}, "x: got inf, expected a finite number"),
        (float("nan"), {"lo": 0, "finite": False}, "x: got nan, expected a number >= 0"),
        (-1, {"lo": 0}, "x: got -1, expected a finite number >= 0"),
        (0, {"lo": 0, "lo_open": True}, "x: got 0, expected a finite number > 0"),
        (
            1.0,
            {"lo": 0, "hi": 1, "hi_open": True},
            "x: got 1.0, expected a finite number in [0, 1)",
        ),
        (
            0.0,
            {"lo": 0, "hi": 3600, "lo_open": True, "expected": "seconds"},
            "x: got 0.0, expected seconds in (0, 3600]",
        ),
        (2e-9, {"lo": 1e-8}, "x: got 2e-09, expected a finite number >= 1e-08"),
        (True, {}, "x: got True, expected a finite number"),
        ("1.5", {"hi": 2}, "x: got '1.5', expected a finite number <= 2"),
    ],
)
def test_float_refusals_in_full(value, kwargs, want):
    lo, hi = kwargs.pop("lo", None), kwargs.pop("hi", None)
    with pytest.raises(InputError) as err:
        check_float("x", value, lo, hi, **kwargs)
    assert str(err.value) == want


def test_infinity_is_taken_only_where_finite_is_off_and_no_bound_excludes_it():
    assert check_float("x", math.inf, 0, finite=False) == math.inf
    assert check_float("x", math.nan, finite=False) != check_float("x", math.nan, finite=False)
    with pytest.raises(InputError, match=r"^x: got inf, expected a number in \[0, 1\]$"):
        check_float("x", math.inf, 0, 1, finite=False)


def test_the_float_check_keeps_the_callers_exception_types():
    with pytest.raises(TypeError) as err:
        check_float("b", "x", 0, 1, error=ValueError, type_error=TypeError)
    assert type(err.value) is TypeError
    with pytest.raises(ValueError) as err:
        check_float("b", 2.0, 0, 1, error=ValueError, type_error=TypeError)
    assert type(err.value) is ValueError and not isinstance(err.value, InputError)


def test_ranges_and_bounds_are_written_one_way():
    assert range_text(0, 1, hi_open=True) == "in [0, 1)"
    assert range_text(0.0, 1.0, lo_open=True) == "in (0, 1]"
    assert range_text(1) == ">= 1" and range_text(0, lo_open=True) == "> 0"
    assert range_text(None, 5) == "<= 5" and range_text(None, 5, hi_open=True) == "< 5"
    assert range_text() == ""
    assert number_text(2**31 - 1) == "2147483647" and number_text(np.int64(4)) == "4"
    assert number_text(1e-30) == "1e-30" and number_text(0.5) == "0.5"
    assert number_text(1e20) == "1e+20" and number_text(math.inf) == "inf"


def test_what_counts_as_a_real_number():
    assert is_real(np.array(1, np.int8)) and not is_real(np.array(True))
    assert not is_real(np.zeros(2)) and not is_real(1j) and not is_real(np.bool_(False))


def test_numpy_scalars_become_the_python_numbers_they_equal():
    from jaxparadigm.common.numbers import plain_number

    got = plain_number(np.int64(3))
    assert got == 3 and type(got) is int
    got = plain_number(np.float32(0.5))
    assert got == 0.5 and type(got) is float
    assert (
        plain_number((np.int32(1), 2)) == (1, 2) and type(plain_number((np.int32(1), 2))[0]) is int
    )
    flag, same = np.bool_(True), (1, 2)
    assert plain_number(flag) is flag and plain_number(same) is same and plain_number("x") == "x"
