"""validate_batch: every kind of violation raises one ValueError naming the field."""

import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxparadigm.errors import InputError
from jaxparadigm.train.data import validate_batch

SCHEMA = {
    "x": ((None, 3), np.float32),
    "y": ((None,), np.int32, (0, 1)),
}


def _batch(n=4):
    return {"x": np.zeros((n, 3), np.float32), "y": np.ones((n,), np.int32)}


def test_conforming_batch_passes_numpy_and_jax():
    validate_batch(_batch(), SCHEMA)
    validate_batch({k: jnp.asarray(v) for k, v in _batch().items()}, SCHEMA)


@pytest.mark.parametrize(
    "change, match",
    [
        (lambda b: b.pop("y"), r"field 'y': missing"),
        (lambda b: b.update(x=np.zeros((4, 2), np.float32)), r"field 'x': got shape \(4, 2\)"),
        (lambda b: b.update(x=np.zeros((4, 3, 1), np.float32)), r"field 'x': got shape"),
        (lambda b: b.update(x=np.zeros((4, 3), np.float64)), r"field 'x': got dtype float64"),
        (lambda b: b["x"].__setitem__((1, 2), np.nan), r"field 'x': 1 non-finite"),
        (lambda b: b["x"].__setitem__((0, 0), -np.inf), r"field 'x': 1 non-finite"),
        (lambda b: b["y"].__setitem__(2, 7), r"field 'y': values span \[1, 7\]"),
    ],
)
def test_violations_name_the_field(change, match):
    batch = _batch()
    change(batch)
    with pytest.raises(ValueError, match=match):
        validate_batch(batch, SCHEMA)


def test_fixed_dimension_and_extra_fields():
    schema = {"x": ((4, 3), np.float32)}
    validate_batch({**_batch(), "extra": np.zeros(2)}, schema)  # unlisted fields are not checked
    with pytest.raises(ValueError, match=r"expected \(4, 3\)"):
        validate_batch(_batch(5), schema)


@pytest.mark.parametrize(
    "batch, schema, match",
    [
        ([1, 2], SCHEMA, "batch: got list"),
        (_batch(), [("x", 1)], "schema: got list"),
        (_batch(), {"x": ((None, 3),)}, r"schema\['x'\]"),
        (_batch(), {"x": ([None, 3], np.float32)}, r"schema\['x'\] shape"),
        (_batch(), {"y": ((None,), np.int32, 5)}, r"schema\['y'\] range"),
    ],
)
def test_bad_arguments_raise_type_error(batch, schema, match):
    with pytest.raises(TypeError, match=match):
        validate_batch(batch, schema)


@settings(max_examples=200, deadline=None)
@given(
    shape=st.lists(st.integers(0, 4), min_size=0, max_size=3),
    spec=st.lists(st.one_of(st.none(), st.integers(0, 4)), min_size=0, max_size=3),
)
def test_shape_rule_matches_definition(shape, spec):
    batch = {"a": np.zeros(shape, np.float32)}
    schema = {"a": (tuple(spec), np.float32)}
    ok = len(shape) == len(spec) and all(
        s is None or s == d for s, d in zip(spec, shape, strict=False)
    )
    if ok:
        validate_batch(batch, schema)
    else:
        with pytest.raises(ValueError, match="field 'a': got shape"):
            validate_batch(batch, schema)


# -- issue 10 ------------------------------------------------------------------------------------

ML_FLOATS = ["bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz"]


def test_exported_from_jaxparadigm_train():
    import jaxparadigm.train as train

    assert train.validate_batch is validate_batch


@pytest.mark.parametrize("name", ML_FLOATS)
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_ml_dtypes_non_finite_values_are_caught(name, bad):
    """``np.issubdtype(bfloat16, np.inexact)`` is False: NaN in these fields used to pass."""
    dtype = np.dtype(getattr(ml_dtypes, name))
    value = np.array([1.0, bad, 2.0], dtype=dtype)  # formats without inf store NaN
    with pytest.raises(InputError, match=r"field 'x': 1 non-finite"):
        validate_batch({"x": value}, {"x": ((3,), name)})
    validate_batch({"x": np.ones(3, dtype)}, {"x": ((3,), dtype, (0.5, 1.0))})


def test_ml_dtypes_range_is_checked():
    value = np.array([0.5, 3.0], dtype=ml_dtypes.bfloat16)
    with pytest.raises(InputError, match=r"values span \[0.5, 3.0\], expected within \[0, 2\]"):
        validate_batch({"x": value}, {"x": ((2,), "bfloat16", (0, 2))})
    ints = np.array([1, 7], dtype=ml_dtypes.int4)
    with pytest.raises(InputError, match=r"values span \[1, 7\]"):
        validate_batch({"x": ints}, {"x": ((2,), ml_dtypes.int4, (0, 5))})


@pytest.mark.parametrize(
    "spec, error, match",
    [
        (((2,), "floaty"), TypeError, r"schema\['x'\] dtype: got 'floaty', not a numpy"),
        (((2,), None), TypeError, r"schema\['x'\] dtype: got None.*float64"),
        (((2,), "U3", ("a", "z")), TypeError, r"schema\['x'\] range: dtype <U3 is not"),
        (((2,), "datetime64[D]", (0, 1)), TypeError, r"schema\['x'\] range: dtype datetime64"),
        (((2,), np.bool_, (0, 1)), TypeError, r"schema\['x'\] range: dtype bool"),
        (((2,), np.complex64, (0, 1)), TypeError, r"schema\['x'\] range: dtype complex64"),
        (((2,), np.float32, ("a", "z")), TypeError, r"bound 'a' is not a real number"),
        (((2,), np.float32, (np.datetime64("2020-01-01"), None)), TypeError, "not a real"),
        (((2,), np.float32, (1.0, 0.0)), ValueError, r"lo = 1.0 > hi = 0.0"),
        (((2,), np.float32, (float("nan"), 1.0)), ValueError, r"NaN bound"),
        (((2,), np.float32, (0.0, np.float32("nan"))), ValueError, r"NaN bound"),
    ],
)
def test_bad_schemas_name_the_field(spec, error, match):
    batch = {"x": np.zeros(2, np.float32)}
    with pytest.raises(error, match=match):
        validate_batch(batch, {"x": spec})


def test_one_sided_and_integer_bounds():
    batch = {"x": np.array([-3.0, 5.0], np.float32), "n": np.array([2**62], np.int64)}
    validate_batch(batch, {"x": ((2,), np.float32, (None, 5)), "n": ((1,), np.int64, (0, None))})
    with pytest.raises(InputError, match="field 'x'"):
        validate_batch(batch, {"x": ((2,), np.float32, (-2.5, None))})
    with pytest.raises(InputError, match="field 'n'"):  # compared as integers, not floats
        validate_batch(batch, {"n": ((1,), np.int64, (0, 2**62 - 1))})


def test_violations_are_input_errors():
    with pytest.raises(InputError, match="field 'y': missing"):
        validate_batch({"x": np.zeros((1, 3), np.float32)}, SCHEMA)


# -- issue 17: tests that kill the surviving mutants of validation.py ------------------------------


@pytest.mark.parametrize(
    "spec, error, message",
    [
        (
            ((2,), None),
            TypeError,
            "schema['x'] dtype: got None, expected a dtype (np.dtype(None) would silently mean "
            "float64)",
        ),
        (
            ((2,), "floaty"),
            TypeError,
            "schema['x'] dtype: got 'floaty', not a numpy or ml_dtypes dtype (e.g. 'float32', "
            "'int32', 'bfloat16', 'float8_e4m3fn')",
        ),
        (
            ((2,), "U3", ("a", "z")),
            TypeError,
            "schema['x'] range: dtype <U3 is not an integer or real floating type; a (lo, hi) "
            "range applies to numeric fields only",
        ),
        (
            ((2,), np.float32, (0.0, "z")),
            TypeError,
            "schema['x'] range: bound 'z' is not a real number; expected (lo, hi) of numbers or "
            "None",
        ),
        (
            ((True, 2), np.float32),
            TypeError,
            "schema['x'] shape: got (True, 2), expected a tuple of ints >= 0 or None",
        ),
        (
            ((-1,), np.float32),
            TypeError,
            "schema['x'] shape: got (-1,), expected a tuple of ints >= 0 or None",
        ),
    ],
)
def test_schema_errors_give_the_whole_message(spec, error, message):
    with pytest.raises(error) as info:
        validate_batch({"x": np.zeros(2, np.float32)}, {"x": spec})
    assert str(info.value) == message


def test_range_bounds_are_inclusive_and_may_coincide():
    """``lo <= value <= hi``: a value equal to either bound passes, and ``lo == hi`` is a range."""
    validate_batch({"x": np.array([2.0, 2.0], np.float32)}, {"x": ((2,), np.float32, (2, 2))})
    validate_batch({"n": np.array([-3, 4], np.int32)}, {"n": ((2,), np.int32, (-3, 4))})
    with pytest.raises(InputError, match=r"values span \[-3, 4\], expected within \[-2, 4\]"):
        validate_batch({"n": np.array([-3, 4], np.int32)}, {"n": ((2,), np.int32, (-2, 4))})


@pytest.mark.parametrize(
    "dtype, value, bounds",
    [
        # float16 has no 2049: a bound of 2049.5 rounds to 2050 in float16, so comparing in the
        # field's own dtype would let 2050 through.
        (np.float16, 2050.0, (0, 2049.5)),
        # float32 has no 2**24 + 0.5: the bound would round down to the value itself.
        (np.float32, 2.0**24, (2.0**24 + 0.5, None)),
    ],
)
def test_float_ranges_are_compared_in_float64(dtype, value, bounds):
    assert float(dtype(value)) == value  # the value itself is exact in the field's dtype
    with pytest.raises(InputError, match="field 'x': values span"):
        validate_batch({"x": np.array([value], dtype)}, {"x": ((1,), dtype, bounds)})
