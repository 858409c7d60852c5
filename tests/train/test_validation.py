"""validate_batch: every kind of violation raises one ValueError naming the field."""

import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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
