"""Schema checks on a batch before it reaches the model (C5.1: "validate data against a schema").

A schema maps a field name to ``(shape, dtype)`` or ``(shape, dtype, (lo, hi))``. ``shape`` is a
tuple whose entries are ints or ``None`` (any size). A batch passes when every schema field is
present, has the rank and sizes given, has exactly the dtype given, is finite (floating dtypes) and,
when a range is given, satisfies ``lo <= value <= hi`` everywhere. The first violation raises one
``ValueError`` naming the field, the value found and what was expected.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

__all__ = ["validate_batch"]


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
    dtype = np.dtype(spec[1])
    bounds = spec[2] if len(spec) == 3 else None
    if bounds is not None and (not isinstance(bounds, tuple) or len(bounds) != 2):
        raise TypeError(f"schema[{name!r}] range: got {bounds!r}, expected a (lo, hi) tuple")
    return shape, dtype, bounds


def validate_batch(batch: Mapping, schema: Mapping) -> None:
    """Raise ``ValueError`` naming the first field of ``batch`` that breaks ``schema`` (C5.1).

    Checks, per schema field: present; ``len(shape) == ndim`` and ``shape[i] in (None, actual[i])``;
    ``dtype == expected``; all finite (floating dtypes); ``lo <= x <= hi`` when a range is given.
    Returns ``None`` when the batch conforms. Works on numpy and JAX arrays (read on the host).
    """
    if not isinstance(batch, Mapping):
        raise TypeError(f"batch: got {type(batch).__name__}, expected a mapping of field -> array")
    if not isinstance(schema, Mapping):
        raise TypeError(f"schema: got {type(schema).__name__}, expected a mapping field -> spec")
    for name, spec in schema.items():
        shape, dtype, bounds = _check_schema_entry(name, spec)
        if name not in batch:
            raise ValueError(
                f"batch field {name!r}: missing; batch has fields {sorted(map(str, batch))}"
            )
        value = np.asarray(batch[name])
        if value.ndim != len(shape) or any(
            want is not None and want != got for want, got in zip(shape, value.shape, strict=True)
        ):
            raise ValueError(
                f"batch field {name!r}: got shape {value.shape}, expected {shape} (None = any size)"
            )
        if value.dtype != dtype:
            raise ValueError(f"batch field {name!r}: got dtype {value.dtype}, expected {dtype}")
        if np.issubdtype(value.dtype, np.inexact) and not np.all(np.isfinite(value)):
            bad = int(np.size(value) - np.count_nonzero(np.isfinite(value)))
            raise ValueError(
                f"batch field {name!r}: {bad} non-finite value(s) (NaN/inf), expected all finite"
            )
        if bounds is not None and value.size:
            lo, hi = bounds
            vmin, vmax = value.min(), value.max()
            if (lo is not None and vmin < lo) or (hi is not None and vmax > hi):
                raise ValueError(
                    f"batch field {name!r}: values span [{vmin}, {vmax}], expected within "
                    f"[{lo}, {hi}]"
                )
