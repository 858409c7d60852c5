"""Construction-time checks of optimiser hyper-parameters (C4.1-C4.4).

Each check runs in Python before anything is traced and raises one ``ValueError`` (or
``TypeError``) naming the argument, the value and what was expected.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

_STORAGE_DTYPES = {
    "float32": jnp.float32,
    "bfloat16": jnp.bfloat16,
    "float16": jnp.float16,
    "complex64": jnp.complex64,
    "complex128": jnp.complex128,
}


def check_number(
    name: str,
    value: Any,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
) -> float:
    """Return ``float(value)`` after checking it is a finite real number within the given bounds."""
    if isinstance(value, (bool, str, bytes)):
        raise TypeError(f"{name}={value!r}: expected a real number")
    try:
        number = float(value)  # Python/NumPy scalars and 0-d arrays
    except (TypeError, ValueError):
        raise TypeError(f"{name}={value!r}: expected a real number") from None
    if not math.isfinite(number):
        raise ValueError(f"{name}={value!r}: expected a finite number")
    lo_ok = low is None or (number > low if low_open else number >= low)
    hi_ok = high is None or (number < high if high_open else number <= high)
    if not (lo_ok and hi_ok):
        left = "(" if low_open else "["
        right = ")" if high_open else "]"
        lo = "-inf" if low is None else repr(low)
        hi = "inf" if high is None else repr(high)
        raise ValueError(f"{name}={value!r}: expected a value in {left}{lo}, {hi}{right}")
    return number


def check_int(name: str, value: Any, *, low: int | None = None) -> int:
    """Return ``int(value)`` after checking it is an integer (not a bool) ``>= low``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name}={value!r}: expected an integer")
    if low is not None and value < low:
        raise ValueError(f"{name}={value!r}: expected an integer >= {low}")
    return int(value)


def warn_value(name: str, value: Any, consequence: str) -> None:
    """``warnings.warn`` (``UserWarning``) that ``name=value`` is accepted, as optax accepts it,
    but is probably not meant: ``consequence`` says what it does (C4.1-C4.3)."""
    warnings.warn(f"{name}={value!r}: accepted (as optax), but {consequence}", stacklevel=3)


def check_signed(name: str, value: Any, consequence: str = "it gives negative rates") -> float:
    """A finite real number of either sign, as optax takes it; a negative one warns (C4.3).

    ``float(value)`` for the check only; the caller keeps ``value`` as given (optax does not
    convert, and ``x**2`` differs from ``x**2.0`` in XLA).
    """
    number = check_number(name, value)
    if number < 0:
        warn_value(name, value, consequence)
    return number


def check_learning_rate(
    name: str, value: Any, *, allow_negative: bool = True
) -> float | Callable[[Any], Any]:
    """A learning rate is a schedule (callable ``count -> value``) or a finite number (C4.1).

    As optax, a negative rate is accepted (gradient *ascent*) with a ``UserWarning``;
    ``allow_negative=False`` (the PyTorch-style optimisers: torch refuses it) raises instead.
    """
    if callable(value):
        return value
    if not allow_negative:
        return check_number(name, value, low=0.0)
    return check_signed(name, value, "a negative learning rate ascends the loss")


def check_decay(name: str, value: Any) -> float:
    """An exponential-decay rate such as Adam's ``b1``/``b2`` must lie in ``[0, 1)``."""
    return check_number(name, value, low=0.0, high=1.0, high_open=True)


def storage_dtype(name: str, dtype: Any) -> Any:
    """Resolve an optimiser-state storage dtype: ``None`` or float32 / bfloat16 / float16 /
    complex64 / complex128 (the complex ones canonicalised as jax does: complex64 without x64).

    Accepts the dtype's name (``"bfloat16"``) or the dtype itself (``jnp.bfloat16``).
    """
    if dtype is None:
        return None
    key = dtype if isinstance(dtype, str) else None
    if key is None:
        try:
            key = np.dtype(dtype).name
        except TypeError:
            key = None
    if key not in _STORAGE_DTYPES:
        raise ValueError(
            f"{name}={dtype!r}: expected None or one of {', '.join(sorted(_STORAGE_DTYPES))}"
        )
    return jax.dtypes.canonicalize_dtype(_STORAGE_DTYPES[key])
