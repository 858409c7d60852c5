"""Schema checks on a batch before it reaches the model (C5.1: "validate data against a schema").

A schema maps a field name to ``(shape, dtype)`` or ``(shape, dtype, (lo, hi))``. ``shape`` is a
tuple whose entries are ints or ``None`` (any size). A batch passes when every schema field is
present, has the rank and sizes given, has exactly the dtype given, is finite (floating dtypes,
including ml_dtypes' ``bfloat16`` and ``float8_*``, which ``np.issubdtype(..., np.inexact)`` does
not recognise) and, when a range is given, satisfies ``lo <= value <= hi`` everywhere. The first
violation raises one :class:`~jaxparadigm.errors.InputError` (a ``ValueError``) naming the field,
the value found and what was expected.

The schema itself is checked first and a bad one raises ``TypeError``/``ValueError`` naming the
field: ``dtype`` must name a dtype (``None`` is refused -- ``np.dtype(None)`` would silently mean
float64 -- and so are unknown names); a range applies to integer and real floating fields only
(not strings, dates, bools or complex) and needs real bounds with ``lo <= hi``, either may be
``None`` (unbounded), neither NaN.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping

import ml_dtypes  # registers bfloat16, float8_* ... with numpy, and gives finfo/iinfo for them
import numpy as np

from jaxparadigm.errors import InputError

__all__ = ["validate_batch"]


def _numeric_kind(dtype: np.dtype) -> str:
    """``"i"`` integer, ``"f"`` real floating (numpy or ml_dtypes), else numpy's ``dtype.kind``."""
    if dtype.kind in "iu":
        return "i"
    if dtype.kind not in "fV":  # complex, bool, strings, dates, objects
        return dtype.kind
    for info, kind in ((ml_dtypes.finfo, "f"), (ml_dtypes.iinfo, "i")):
        try:
            info(dtype)
        except (ValueError, TypeError):
            continue
        return kind
    return dtype.kind


def _schema_dtype(name: str, spec) -> np.dtype:
    if spec is None:
        raise TypeError(
            f"schema[{name!r}] dtype: got None, expected a dtype (np.dtype(None) would silently "
            "mean float64)"
        )
    try:
        return np.dtype(spec)
    except TypeError:
        raise TypeError(
            f"schema[{name!r}] dtype: got {spec!r}, not a numpy or ml_dtypes dtype (e.g. "
            "'float32', 'int32', 'bfloat16', 'float8_e4m3fn')"
        ) from None


def _schema_bounds(name: str, bounds, dtype: np.dtype) -> tuple | None:
    if bounds is None:
        return None
    if not isinstance(bounds, tuple) or len(bounds) != 2:
        raise TypeError(f"schema[{name!r}] range: got {bounds!r}, expected a (lo, hi) tuple")
    if _numeric_kind(dtype) not in "if":
        raise TypeError(
            f"schema[{name!r}] range: dtype {dtype} is not an integer or real floating type; "
            "a (lo, hi) range applies to numeric fields only"
        )
    for bound in bounds:
        if bound is not None and (
            isinstance(bound, (bool, np.bool_)) or not isinstance(bound, numbers.Real)
        ):
            raise TypeError(
                f"schema[{name!r}] range: bound {bound!r} is not a real number; expected "
                "(lo, hi) of numbers or None"
            )
    lo, hi = bounds
    if any(b is not None and b != b for b in bounds):  # only NaN differs from itself
        raise ValueError(f"schema[{name!r}] range: got {bounds!r}, a NaN bound compares false")
    if lo is not None and hi is not None and lo > hi:
        raise ValueError(f"schema[{name!r}] range: lo = {lo} > hi = {hi}, an empty range")
    return bounds


def _check_schema_entry(name: str, spec) -> tuple:
    if not isinstance(spec, tuple) or len(spec) not in (2, 3):
        raise TypeError(
            f"schema[{name!r}]: got {spec!r}, expected (shape, dtype) or (shape, dtype, (lo, hi))"
        )
    shape = spec[0]
    if not isinstance(shape, tuple) or not all(
        d is None or (isinstance(d, int) and not isinstance(d, bool) and d >= 0) for d in shape
    ):
        raise TypeError(
            f"schema[{name!r}] shape: got {shape!r}, expected a tuple of ints >= 0 or None"
        )
    dtype = _schema_dtype(name, spec[1])
    bounds = _schema_bounds(name, spec[2] if len(spec) == 3 else None, dtype)
    return shape, dtype, bounds


def _check_values(name: str, value: np.ndarray, bounds: tuple | None) -> None:
    """Finite (floating kinds) and within ``bounds`` (compared in float64 for floating kinds)."""
    kind = _numeric_kind(value.dtype)
    if kind in "fc":
        finite = np.isfinite(value)
        if not np.all(finite):
            bad = int(finite.size - np.count_nonzero(finite))
            raise InputError(
                f"batch field {name!r}: {bad} non-finite value(s) (NaN/inf), expected all finite"
            )
    if bounds is None or not value.size:
        return
    if kind == "f":
        value = value.astype(np.float64)  # ml_dtypes floats compare exactly in float64
    lo, hi = bounds
    vmin, vmax = value.min(), value.max()
    if (lo is not None and vmin < lo) or (hi is not None and vmax > hi):
        raise InputError(
            f"batch field {name!r}: values span [{vmin}, {vmax}], expected within [{lo}, {hi}]"
        )


def validate_batch(batch: Mapping, schema: Mapping) -> None:
    """Raise ``InputError`` naming the first field of ``batch`` that breaks ``schema`` (C5.1).

    Checks, per schema field: present; ``len(shape) == ndim`` and ``shape[i] in (None, actual[i])``;
    ``dtype == expected``; all finite (floating dtypes, ml_dtypes' included); ``lo <= x <= hi``
    when a range is given. Returns ``None`` when the batch conforms. Works on numpy and JAX arrays
    (read on the host). A malformed schema raises ``TypeError``/``ValueError`` naming the field.
    """
    if not isinstance(batch, Mapping):
        raise TypeError(f"batch: got {type(batch).__name__}, expected a mapping of field -> array")
    if not isinstance(schema, Mapping):
        raise TypeError(f"schema: got {type(schema).__name__}, expected a mapping field -> spec")
    for name, spec in schema.items():
        shape, dtype, bounds = _check_schema_entry(name, spec)
        if name not in batch:
            raise InputError(
                f"batch field {name!r}: missing; batch has fields {sorted(map(str, batch))}"
            )
        value = np.asarray(batch[name])
        if value.ndim != len(shape) or any(
            want is not None and want != got for want, got in zip(shape, value.shape, strict=True)
        ):
            raise InputError(
                f"batch field {name!r}: got shape {value.shape}, expected {shape} (None = any size)"
            )
        if value.dtype != dtype:
            raise InputError(f"batch field {name!r}: got dtype {value.dtype}, expected {dtype}")
        _check_values(name, value, bounds)
