"""Construction-time checks of optimiser hyper-parameters (C4.1-C4.4).

Two policies, one per kind of argument (a refusal optax does not make is a porting trap):

* An argument optax takes (``adam``, ``sgd``, the schedules, the optax-style clipping): any value
  optax computes with is accepted, as given; one that surely gives NaN, infinite, negative or
  non-descending steps emits one ``UserWarning`` naming the argument, its value and the
  consequence (:func:`accept_number`, :func:`accept_steps`). A traced value (an optimiser built
  inside ``jax.jit`` or ``jax.grad``, e.g. a learning rate being meta-learned) or an array of
  several entries cannot be read on the host: as in optax it is used unchecked.
* An argument whose peer refuses a value (``torch.optim.Adam``, ``LinearLR``) or that optax cannot
  take at all (a string, a dtype it fails to promote): one ``ValueError`` (or ``TypeError``) naming
  the argument, the value and what was expected (:func:`check_number`, and
  :func:`jaxparadigm.common.numbers.check_int` for an integer).
"""

from __future__ import annotations

import math
import os
import sys
import types
import warnings
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxparadigm.common.numbers import check_float

# Dtypes optax can store a moment in: its ``tree.cast`` and the float32 arithmetic around it
# promote them. float8/int4 types are missing: optax fails on them (no implicit promotion path).
_STORAGE_DTYPES = (
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "bfloat16",
    "float32",
    "float64",
    "complex64",
    "complex128",
)


_OPTIM_DIR = os.path.dirname(os.path.abspath(__file__))


def _caller_stacklevel() -> int:
    """The ``stacklevel`` of the first frame outside ``jaxparadigm/optim``: a warning points at
    the user's line, however deep in the library the argument was checked."""
    frame: types.FrameType | None = sys._getframe(2)
    level = 2
    while frame is not None and frame.f_code.co_filename.startswith(_OPTIM_DIR):
        frame, level = frame.f_back, level + 1
    return level


def warn_user(message: str) -> None:
    """``warnings.warn(message)`` (``UserWarning``) pointing at the caller's line outside the
    library."""
    warnings.warn(message, UserWarning, stacklevel=_caller_stacklevel())


def warn_value(name: str, value: Any, consequence: str) -> None:
    """A ``UserWarning`` that ``name=value`` is accepted, as optax accepts it, but is probably not
    meant: ``consequence`` says what it does (C4.1-C4.3)."""
    warn_user(f"{name}={value!r}: accepted (as optax), but {consequence}")


def host_number(name: str, value: Any) -> float | None:
    """``float(value)`` for a host scalar; ``None`` for a value the host cannot read (a tracer,
    or an array of several entries): optax uses those as given, and so do we, unchecked.

    A string, bytes, ``None``, a list or any non-number raises ``TypeError`` (optax fails on them
    inside its arithmetic). A bool is read as 1/0, as optax's arithmetic reads it, with a warning.
    """
    if isinstance(value, jax.core.Tracer):
        return None
    if isinstance(value, (np.ndarray, jax.Array)) and np.ndim(value) > 0:
        return None
    if value is None or isinstance(value, (str, bytes, list, tuple, dict, complex)):
        raise TypeError(f"{name}={value!r}: expected a real number")
    try:
        number = float(value)  # Python/NumPy scalars and 0-d arrays
    except (TypeError, ValueError):
        raise TypeError(f"{name}={value!r}: expected a real number") from None
    if isinstance(value, (bool, np.bool_)):
        warn_value(name, value, f"a bool is read as the number {number:g}")
    return number


def accept_number(
    name: str,
    value: Any,
    problem: Callable[[float], str | None] | None = None,
    *,
    warn_infinite: bool = True,
) -> float | None:
    """Accept any real number, as optax does, and warn when it is surely a mistake (C4.1-C4.3).

    Warns (one ``UserWarning`` naming ``name`` and the value) for NaN, for ``problem(x)`` when it
    returns a consequence, else for an infinite value (unless ``warn_infinite=False``: a clipping
    bound of ``inf`` means "no clipping"). Returns the host float (``None`` for a traced value,
    see :func:`host_number`); callers use ``value`` as given, as optax does.
    """
    number = host_number(name, value)
    if number is None:
        return None
    if math.isnan(number):
        warn_value(name, value, "NaN makes every value computed from it NaN")
    elif problem is not None and (consequence := problem(number)) is not None:
        warn_value(name, value, consequence)
    elif warn_infinite and math.isinf(number):
        warn_value(name, value, "an infinite value gives infinite or NaN steps")
    return number


def check_signed(
    name: str, value: Any, consequence: str = "it gives negative rates"
) -> float | None:
    """Any real number, as optax takes it; a negative one warns with ``consequence`` (C4.3)."""
    return accept_number(name, value, lambda x: consequence if x < 0 else None)


def check_learning_rate(
    name: str, value: Any, *, torch_rules: bool = False
) -> float | Callable[[Any], Any]:
    """A learning rate is a schedule (callable ``count -> value``) or a number (C4.1).

    As optax, any real number is accepted: negative (gradient *ascent*), NaN or infinite ones with a
    ``UserWarning``. ``torch_rules=True`` (``adam_torch_style``) applies ``torch.optim.Adam``'s own
    check ``0 <= lr`` (NaN and negative rates raise ``ValueError``, ``inf`` is taken).
    """
    if callable(value):
        return value
    if torch_rules:
        return check_torch_range(name, value, low=0.0)
    accept_number(
        name, value, lambda x: "a negative learning rate ascends the loss" if x < 0 else None
    )
    return value


def check_decay(name: str, value: Any) -> float | None:
    """An exponential-decay rate (Adam's ``b1``/``b2``): any real number, as optax; outside
    ``[0, 1)`` a ``UserWarning`` (``b = 1``: the bias correction ``1 - b**t`` is 0, every update
    NaN; otherwise the moment is no exponential average of the gradients)."""

    def problem(b: float) -> str | None:
        if 0.0 <= b < 1.0:
            return None
        if b == 1.0:
            return "the bias correction 1 - b**t is 0: every update is NaN"
        return "outside [0, 1) the moment is no exponential average of the gradients"

    return accept_number(name, value, problem)


def check_momentum(name: str, value: Any) -> float | None:
    """A momentum (``trace``'s decay): any real number, as ``optax.trace``; outside ``[0, 1)`` a
    ``UserWarning`` (negative: the buffer alternates in sign; ``>= 1``: it grows without bound)."""

    def problem(m: float) -> str | None:
        if m < 0.0:
            return "a negative momentum flips the sign of the buffer at every step"
        if m >= 1.0:
            return "a momentum >= 1 lets the buffer grow without bound"
        return None

    return accept_number(name, value, problem)


def check_weight_decay(name: str, value: Any) -> float | None:
    """A weight decay: any real number or a schedule ``count -> value`` (returns None), as
    ``optax.add_decayed_weights``; a negative number warns (it grows the weights)."""
    if callable(value):
        return None
    return accept_number(
        name, value, lambda x: "a negative weight decay grows the weights" if x < 0 else None
    )


def is_host_zero(value: Any) -> bool:
    """True for a host number equal to 0 (a tracer or an array of several entries is not)."""
    if value is None or callable(value) or isinstance(value, jax.core.Tracer):
        return False
    if np.ndim(value) > 0:
        return False
    try:
        return float(value) == 0.0
    except (TypeError, ValueError):
        return False


def check_nesterov(value: Any) -> bool:
    """``nesterov`` as optax reads it (``if nesterov``): a bool, or any value with a truth value,
    which warns (``nesterov="false"`` is true). A traced value raises ``TypeError``: optax cannot
    branch on it either."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    try:
        flag = bool(value)
    except (TypeError, ValueError):  # a tracer (ConcretizationTypeError) or an array
        raise TypeError(f"nesterov={value!r}: expected a bool known on the host") from None
    warn_value("nesterov", value, f"it is not a bool and is read by its truth value ({flag})")
    return flag


def _host_scalar(value: Any) -> Any:
    """A concrete 0-d ``jax.Array`` as a NumPy 0-d array (readable on the host); anything else
    (a tracer included) as given, for :func:`jaxparadigm.common.numbers.check_float` to judge."""
    if isinstance(value, jax.Array) and not isinstance(value, jax.core.Tracer) and value.ndim == 0:
        return np.asarray(value)
    return value


def check_number(
    name: str,
    value: Any,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
) -> float:
    """``float(value)`` after checking it is a finite real number within the given bounds.

    For arguments no optax function takes (the loss scale, ``lr_scale``, the training config):
    :func:`jaxparadigm.common.numbers.check_float`, a non-number (a bool, a string, a traced
    value) a ``TypeError``, a non-finite or out-of-range one a ``ValueError``, each
    ``"NAME: got VALUE, expected a finite number in [LOW, HIGH]"``.
    """
    return check_float(
        name,
        _host_scalar(value),
        low,
        high,
        lo_open=low_open,
        hi_open=high_open,
        error=ValueError,
        type_error=TypeError,
    )


def check_torch_range(
    name: str, value: Any, *, low: float, high: float | None = None, high_open: bool = False
) -> float:
    """torch's own check of an optimiser argument: ``low <= value`` (``< high`` / ``<= high``),
    NaN refused and ``inf`` taken where the upper end is open, as ``torch.optim.Adam`` does
    (:func:`jaxparadigm.common.numbers.check_float` with ``finite=False``)."""
    return check_float(
        name,
        _host_scalar(value),
        low,
        high,
        hi_open=high_open,
        finite=False,
        error=ValueError,
        type_error=TypeError,
    )


def accept_steps(name: str, value: Any) -> int | float:
    """A step count of a schedule (``transition_steps``, a ``join`` boundary...), as optax takes it.

    An integer (or an integral float such as ``1e3``) is returned as a Python int: the schedules'
    overflow-safe integer path. Any other real number (``2.5``, NaN, ``inf``) is accepted as optax
    computes with it, with a ``UserWarning``, and returned as a float: the schedule then uses
    optax's float arithmetic. Non-numbers raise ``TypeError``.
    """
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return int(value)
    number = host_number(name, value)
    if number is None:
        raise TypeError(f"{name}={value!r}: expected a step count known on the host")
    if math.isfinite(number) and number == int(number):
        return int(number)
    warn_value(name, value, "a step count that is not a finite integer (computed as optax does)")
    return number


def storage_dtype(name: str, dtype: Any) -> Any:
    """Resolve an optimiser-state storage dtype as optax does (``jax.dtypes.canonicalize_dtype``:
    float64 is float32 and complex128 complex64 while x64 is off).

    ``None`` (the params' dtype), or the name or type of a bool, integer, float or complex dtype.
    An integer or bool store truncates the moment at every step (optax does so too): accepted with
    a ``UserWarning``. float8 and int4 types raise ``ValueError``: optax fails on them (no implicit
    promotion with the float32 arithmetic).
    """
    if dtype is None:
        return None
    try:
        resolved = jnp.dtype(dtype)
    except TypeError:
        resolved = None
    if resolved is None or resolved.name not in _STORAGE_DTYPES:
        raise ValueError(
            f"{name}={dtype!r}: expected None or a dtype optax can store a moment in "
            f"({', '.join(_STORAGE_DTYPES)})"
        )
    canonical = jax.dtypes.canonicalize_dtype(resolved)
    if not jnp.issubdtype(canonical, jnp.inexact):
        warn_value(name, dtype, "an integer or bool store truncates the moment at every step")
    return canonical
