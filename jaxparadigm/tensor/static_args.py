"""Static arguments (shapes, strides, dims, storages) checked in Python before tracing (C2.1).

Every tensor function validates its static metadata here first, so bad input fails with one
``TypeError``/``ValueError`` naming the argument, the value and what was expected, never inside
a trace. A single int is checked by :func:`jaxparadigm.common.numbers.check_int` (a Python or
NumPy integer; a bool, a float or a traced value is a ``TypeError``).
"""

from __future__ import annotations

from typing import Any

from jaxparadigm.common.numbers import check_int
from jaxparadigm.common.quoting import quote


def as_int_tuple(values: Any, name: str) -> tuple[int, ...]:
    """A sequence of ints as a tuple (``TypeError`` naming ``name`` and the bad entry)."""
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise TypeError(f"{name}: got {quote(values)}, expected a sequence of ints")
    return tuple(check_int(f"{name}[{i}]", v, error=TypeError) for i, v in enumerate(values))


def dims_arg(dims: tuple[Any, ...], name: str) -> tuple[Any, ...]:
    """Accept both ``f(2, 3)`` and ``f((2, 3))`` call styles, as PyTorch does."""
    if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
        return tuple(dims[0])
    return dims


def contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    """Row-major strides: ``stride[d] = stride[d+1] * max(shape[d+1], 1)``, last stride 1."""
    strides = [1] * len(shape)
    for d in range(len(shape) - 2, -1, -1):
        strides[d] = strides[d + 1] * max(shape[d + 1], 1)
    return tuple(strides)


def storage_size_of(storage: Any, name: str = "storage") -> int:
    """Number of elements of a 1-D storage, else ``TypeError``/``ValueError`` naming ``name``."""
    shape = getattr(storage, "shape", None)
    if shape is None or not hasattr(storage, "dtype"):
        raise TypeError(
            f"{name} must be a 1-D jax.Array or numpy array, got {type(storage).__name__}"
        )
    if len(shape) != 1:
        raise ValueError(f"{name} must be 1-D (a flat storage), got shape {tuple(shape)}")
    return int(shape[0])
