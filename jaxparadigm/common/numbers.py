"""The one check of a numeric argument: an int, or a real number in a range (C1.1, C5.1).

    check_int(name, value, lo, hi)      int(value) for a Python or NumPy integer (never a bool)
                                        with lo <= value <= hi; else one error
                                        "NAME: got VALUE, expected an int in [LO, HI]"
    check_float(name, value, lo, hi)    float(value) for a real number (int, float, a NumPy
                                        scalar or 0-d array; never a bool) in the range, NaN
                                        refused where a range is asked, non-finite values refused
                                        unless ``finite=False``: "NAME: got VALUE, expected ..."
    range_text(lo, hi, ...)             "in [0, 1)", ">= 1", "> 0", "<= 5": how every range is
                                        written (also by :class:`jaxparadigm.fields.Bounds`)
    plain_number(value)                 a NumPy scalar as the Python number it equals (the
                                        settings types store their fields so)

Both raise :class:`~jaxparadigm.common.errors.InputError` (a ``ValueError``) unless the caller
names its own exception types: ``error`` for a value out of range, ``type_error`` for a value of
the wrong type (default: ``error``), so a library keeps the ``TypeError``/``ValueError`` contract
its tests pin. The value is quoted by :func:`~jaxparadigm.common.quoting.quote` (bounded).
"""

from __future__ import annotations

import math

import numpy as np

from jaxparadigm.common.errors import InputError
from jaxparadigm.common.quoting import quote

__all__ = [
    "check_float",
    "check_int",
    "is_int",
    "is_real",
    "number_text",
    "plain_number",
    "range_text",
]


def is_int(value: object) -> bool:
    """Whether ``value`` is a Python int or a NumPy integer scalar (a bool is not)."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def is_real(value: object) -> bool:
    """Whether ``value`` is a real number: an int (:func:`is_int`), a Python or NumPy float, or a
    0-d NumPy array of an integer or float dtype (a bool of any kind is not)."""
    if is_int(value) or isinstance(value, (float, np.floating)):
        return True
    return isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "iuf"


def plain_number(value: object) -> object:
    """A NumPy integer or float scalar as the Python ``int``/``float`` it equals (a tuple of them
    item by item); anything else, a NumPy bool included, as given."""
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    if isinstance(value, tuple) and any(isinstance(v, (np.integer, np.floating)) for v in value):
        return tuple(plain_number(v) for v in value)
    return value


def number_text(x: float) -> str:
    """A bound as written in a message: ``1``, ``0``, ``2147483647`` for integral values, else
    ``%g`` (``0.5``, ``1e-08``)."""
    if isinstance(x, (int, np.integer)) and not isinstance(x, bool):
        return str(int(x))
    return str(int(x)) if float(x).is_integer() and abs(x) < 1e16 else f"{x:g}"


def range_text(
    lo: float | None = None,
    hi: float | None = None,
    *,
    lo_open: bool = False,
    hi_open: bool = False,
) -> str:
    """``in [LO, HI]`` (``(``/``)`` for an open end), ``>= LO``, ``> LO``, ``<= HI``, ``< HI``;
    ``""`` when neither bound is given."""
    if lo is not None and hi is not None:
        left, right = "(" if lo_open else "[", ")" if hi_open else "]"
        return f"in {left}{number_text(lo)}, {number_text(hi)}{right}"
    if lo is not None:
        return f"{'>' if lo_open else '>='} {number_text(lo)}"
    if hi is not None:
        return f"{'<' if hi_open else '<='} {number_text(hi)}"
    return ""


def _refuse(name: str, value: object, want: str, rng: str, error: type[Exception]) -> Exception:
    return error(f"{name}: got {quote(value)}, expected {want}{' ' + rng if rng else ''}")


def check_int(
    name: str,
    value: object,
    lo: int | None = None,
    hi: int | None = None,
    *,
    error: type[Exception] = InputError,
    type_error: type[Exception] | None = None,
    expected: str = "an int",
) -> int:
    """``int(value)`` if ``value`` is a Python or NumPy integer (not a bool) with
    ``lo <= value <= hi`` (a bound that is None is not checked).

    Otherwise raises ``error`` (``type_error`` for a value that is no int; default ``error``):
    ``"NAME: got VALUE, expected an int in [LO, HI]"`` (``>= LO``, ``<= HI``); ``expected``
    replaces "an int" (e.g. "an int or None" where None is also taken).
    """
    rng = range_text(lo, hi)
    if not is_int(value):
        raise _refuse(name, value, expected, rng, type_error or error)
    number = int(value)  # type: ignore[call-overload]
    if (lo is not None and number < lo) or (hi is not None and number > hi):
        raise _refuse(name, value, expected, rng, error)
    return number


def check_float(
    name: str,
    value: object,
    lo: float | None = None,
    hi: float | None = None,
    *,
    lo_open: bool = False,
    hi_open: bool = False,
    finite: bool = True,
    error: type[Exception] = InputError,
    type_error: type[Exception] | None = None,
    expected: str | None = None,
) -> float:
    """``float(value)`` if ``value`` is a real number (:func:`is_real`) within the bounds
    (``lo_open``/``hi_open``: that end excluded).

    NaN is refused wherever a bound is given; ``finite`` (default) also refuses NaN and
    infinities without one. Otherwise raises ``error`` (``type_error`` for a value that is no real
    number; default ``error``): ``"NAME: got VALUE, expected a finite number in [LO, HI]"``;
    ``expected`` replaces "a finite number" / "a number" (e.g. "seconds", "milliseconds").
    """
    rng = range_text(lo, hi, lo_open=lo_open, hi_open=hi_open)
    want = expected or ("a finite number" if finite else "a number")
    if not is_real(value):
        raise _refuse(name, value, want, rng, type_error or error)
    number = float(value)  # type: ignore[arg-type]
    bounded = lo is not None or hi is not None
    if (finite and not math.isfinite(number)) or (bounded and math.isnan(number)):
        raise _refuse(name, value, want, rng, error)
    low_ok = lo is None or (number > lo if lo_open else number >= lo)
    high_ok = hi is None or (number < hi if hi_open else number <= hi)
    if not (low_ok and high_ok):
        raise _refuse(name, value, want, rng, error)
    return number
