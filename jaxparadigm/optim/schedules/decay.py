"""Optax-style schedules ``count -> value`` that survive any step count (C4.3).

Each schedule clamps its count before using it, so an int32 count anywhere in
``[0, 2**31 - 1]``, a wrapped negative int32 count, or a Python int beyond int32 (handled in
Python, never converted to int32) gives a finite value ``>= 0`` for non-negative arguments. On
non-negative int32 counts every schedule equals its optax counterpart exactly.

NaN counts (only a floating count can be NaN) read as ``0``, so the schedule returns its first
value instead of NaN: inside a JAX array (traced or not) silently, with
``where(isnan(count), 0, count)``; on the host (Python float, NumPy scalar or array) with a
``UserWarning``. ``+inf`` reads as the end of the schedule and ``-inf`` as its start (the usual
clamp). optax returns NaN for a NaN count.

Arguments are taken as optax takes them (a refusal optax does not make is a porting trap): any
real value (negative, NaN or infinite ones warn), ``end_value > peak_value``, ``alpha`` outside
``[0, 1]``, ``power``/``exponent <= 0``, ``transition_steps <= 0`` (a constant ``init_value``),
``transition_begin < 0`` (read as 0), negative or unordered ``join`` boundaries, a ``join`` with
more or fewer boundaries than ``len(schedules) - 1`` (the extra ones are dropped, as optax's
``zip`` drops them, with a warning), and step counts that are not integers (with a warning; then
the schedule computes with optax's float arithmetic). Still refused, as optax
refuses them or fails on them: ``decay_steps <= 0`` (or NaN) in the cosine schedules, an empty or
non-callable ``join`` list, non-numbers. With integer step arguments the clamp of the count is
unchanged, so a wrapped (negative) int32 counter reads as count -1: each piece's count 0, and a
``join``'s first piece (a boundary ``<= 0`` puts a later piece at count 0); never a negative
rate when all values are ``>= 0``.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxparadigm.optim.hyperparam_checks import (
    accept_number,
    accept_steps,
    check_signed,
    host_number,
    warn_user,
)

Schedule = Callable[[Any], Any]


def is_host_int(count: Any) -> bool:
    """True for a Python/NumPy integer: a count that may exceed int32 and is clamped in Python."""
    return isinstance(count, (int, np.integer)) and not isinstance(count, bool)


def shift_count(count: Any, by: float) -> Any:
    """``count - by`` saturating at the integer dtype's bounds instead of wrapping (C4.3).

    A wrapped int32 counter (``-2**31``) minus a positive ``transition_begin`` would wrap to
    ``2**31 - 1`` (the *end* of the schedule), and a count near ``2**31 - 1`` minus a negative
    ``join`` boundary to ``-2**31`` (its start). Equal to ``count - by`` whenever that does not
    overflow (so to optax on every such count); floating and host counts, and a non-integer
    ``by`` (optax's float arithmetic), are subtracted plainly.
    """
    if not isinstance(by, int) or by == 0 or is_host_int(count):
        return count - by
    if not jnp.issubdtype(jnp.result_type(count), jnp.integer):
        return count - by
    info = jnp.iinfo(jnp.result_type(count))
    if by > 0:
        if by > info.max:
            return jnp.full_like(count, info.min)
        return jnp.where(count < info.min + by, info.min, count - by)
    if -by > info.max:
        return jnp.full_like(count, info.max)
    return jnp.where(count > info.max + by, info.max, count - by)


def sanitize_count(count: Any) -> Any:
    """The count a schedule uses (C4.3): host ints unchanged, NaN read as 0.

    A NaN inside a floating JAX array (traced or concrete) becomes ``0`` with
    ``where(isnan(count), 0, count)``; a Python/NumPy NaN becomes 0 too, with a ``UserWarning``
    naming ``count`` (optax would return NaN). Integer counts pass through untouched, so int32
    counts compile to exactly optax's program.
    """
    if is_host_int(count):
        return count
    if isinstance(count, (float, np.floating, np.ndarray)):
        host = np.asarray(count)
        if np.issubdtype(host.dtype, np.floating) and np.isnan(host).any():
            warn_user(
                f"count={count!r}: a NaN step count reads as count 0 (the schedule's first "
                "value; optax returns NaN)"
            )
            if isinstance(count, np.ndarray):
                return np.where(np.isnan(count), np.zeros_like(count), count)
            return type(count)(0.0)
        return count
    if isinstance(count, jax.Array) and jnp.issubdtype(count.dtype, jnp.floating):
        return jnp.where(jnp.isnan(count), jnp.zeros_like(count), count)
    return count


def constant(value: float) -> Schedule:
    """``lr(t) = value`` for every ``t`` (C4.3); ``optax.constant_schedule``.

    ``value`` is any real number (negative, NaN or infinite: a ``UserWarning``). A host NaN count
    warns like in every other schedule (``sanitize_count``).
    """
    check_signed("value", value)

    def schedule(count):
        sanitize_count(count)
        return value

    return schedule


def polynomial(
    init_value: float,
    end_value: float,
    power: float,
    transition_steps: float,
    transition_begin: float = 0,
) -> Schedule:
    """``lr(t) = (init - end) * (1 - c / T)**power + end``, ``c = clip(t - begin, 0, T)`` (C4.3).

    TF's ``PolynomialDecay`` and optax's ``polynomial_schedule``; the clip is what keeps a
    wrapped (negative) counter from leaving ``[min(init, end), max(init, end)]``. As optax:
    ``transition_steps <= 0`` gives the constant ``init_value``, ``transition_begin < 0`` reads as
    0, negative values and ``power < 0`` (an infinite value at the end) warn but are accepted;
    non-integer step arguments warn and use optax's float arithmetic.
    """
    check_signed("init_value", init_value)
    check_signed("end_value", end_value)
    check_signed("power", power, "the value is infinite once the transition ends")
    transition_steps = accept_steps("transition_steps", transition_steps)
    transition_begin = accept_steps("transition_begin", transition_begin)
    if transition_steps <= 0:
        return constant(init_value)
    if transition_begin < 0:
        transition_begin = 0
    integer_steps = isinstance(transition_steps, int) and isinstance(transition_begin, int)

    def schedule(count):
        count = sanitize_count(count)
        if integer_steps and is_host_int(count):
            count = jnp.asarray(min(max(int(count) - transition_begin, 0), transition_steps))
        elif integer_steps:
            count = jnp.clip(shift_count(count, transition_begin), 0, transition_steps)
        else:  # optax's arithmetic, a host count as a Python float
            count = float(count) if is_host_int(count) else count
            count = jnp.clip(count - transition_begin, 0, transition_steps)
        frac = 1 - count / transition_steps
        return (init_value - end_value) * (frac**power) + end_value

    return schedule


def linear(
    init_value: float, end_value: float, transition_steps: float, transition_begin: float = 0
) -> Schedule:
    """``lr(t) = init + (end - init) * c / T`` with ``c = clip(t - begin, 0, T)`` (C4.3).

    ``polynomial`` with ``power=1``; equals ``optax.linear_schedule`` (``T=0``: constant ``init``).
    """
    return polynomial(init_value, end_value, 1, transition_steps, transition_begin)


def cosine_decay(
    init_value: float, decay_steps: float, alpha: float = 0.0, exponent: float = 1.0
) -> Schedule:
    """``lr(t) = init * ((1 - alpha) * (0.5 * (1 + cos(pi * c / D)))**exponent + alpha)``.

    ``c = clip(t, 0, D)``. Loshchilov & Hutter, SGDR (2017); equals
    ``optax.cosine_decay_schedule`` including its ``exponent`` (C4.3) on counts ``>= 0`` (optax
    does not clip below 0). As optax, any real ``init_value``, ``alpha`` and ``exponent`` are
    accepted; a negative end value ``init * alpha``, ``exponent < 0`` (infinite at ``c = D``) and
    NaN or infinite values warn. ``decay_steps`` must be ``> 0`` (optax raises ``ValueError``
    too); a non-integer one warns.
    """
    init = check_signed("init_value", init_value)
    number = host_number("decay_steps", decay_steps)
    if number is not None and not number > 0:  # before accept_steps warns about a fraction
        raise ValueError(f"decay_steps={decay_steps!r}: expected a value > 0 (optax raises too)")
    decay_steps = accept_steps("decay_steps", decay_steps)

    def negative_end(a: float) -> str | None:
        if init is not None and init > 0 and a < 0:  # a negative init warned already
            return f"the end value init_value * alpha = {init * a} is negative"
        return None

    accept_number("alpha", alpha, negative_end)
    # Checked, not converted: optax uses the value as given (``x**2`` and ``x**2.0`` differ in XLA).
    check_signed("exponent", exponent, "the value is infinite at the end of the decay")
    steps = float(decay_steps)

    def schedule(count):
        count = sanitize_count(count)
        if is_host_int(count):
            count = float(count)
        count = jnp.minimum(jnp.maximum(count, 0), steps)
        cosine = 0.5 * (1 + jnp.cos(jnp.pi * count / steps))
        return init_value * ((1 - alpha) * cosine**exponent + alpha)

    return schedule


def join(schedules: Sequence[Schedule], boundaries: Sequence[float]) -> Schedule:
    """Piecewise: ``schedules[i](t - boundaries[i-1])`` once ``t >= boundaries[i-1]`` (C4.3).

    Equals ``optax.join_schedules`` for any boundaries, negative or unordered included (piece
    ``i`` wins whenever ``t >= boundaries[i-1]``, later pieces over earlier ones). Pieces and
    boundaries are paired as optax's ``zip`` pairs them: with ``len(boundaries) !=
    len(schedules) - 1`` the extra schedules (never reached) or extra boundaries (ignored) are
    dropped, with a ``UserWarning``. Integer boundaries: Python int counts select the piece in
    Python and array counts saturate ``t - boundary`` (C4.3); non-integer ones (a warning) use
    optax's arithmetic. An empty or non-callable ``schedules`` raises ``TypeError`` (optax fails
    on it when called).
    """
    schedules = list(schedules)
    if not schedules or not all(callable(s) for s in schedules):
        raise TypeError(f"schedules={schedules!r}: expected a non-empty sequence of callables")
    boundaries = [accept_steps(f"boundaries[{i}]", b) for i, b in enumerate(boundaries)]
    if len(schedules) != len(boundaries) + 1:
        used = min(len(boundaries), len(schedules) - 1)
        dropped = (
            f"schedules[{used + 1}:] are never used"
            if len(schedules) > len(boundaries) + 1
            else f"boundaries[{used}:] are ignored"
        )
        warn_user(
            f"boundaries={boundaries!r}: accepted (as optax), but {len(schedules)} schedules "
            f"need {len(schedules) - 1} boundaries; {dropped}, as optax's zip drops them"
        )
    pairs = list(zip(boundaries, schedules[1:], strict=False))  # as optax: extras dropped
    integer = all(isinstance(b, int) for b in boundaries)

    def schedule(step):
        step = sanitize_count(step)
        if integer and is_host_int(step):
            step = int(step)
            chosen, offset = schedules[0], 0  # ints: every boundary is one here
            for boundary, piece in pairs:
                if step >= boundary:
                    chosen, offset = piece, int(boundary)
            return chosen(step - offset)
        output = schedules[0](step)
        for boundary, piece in pairs:
            output = jnp.where(step < boundary, output, piece(shift_count(step, boundary)))
        return output

    return schedule


def warmup_cosine_decay(
    init_value: float,
    peak_value: float,
    warmup_steps: float,
    decay_steps: float,
    end_value: float = 0.0,
    exponent: float = 1.0,
) -> Schedule:
    """Linear warmup ``init -> peak`` over ``warmup_steps``, then cosine ``peak -> end`` (C4.3).

    ``decay_steps`` counts the warmup too (optax's ``warmup_cosine_decay_schedule``), so it must
    exceed ``warmup_steps`` (optax raises too). ``alpha = end / peak``; ``exponent`` as in
    ``cosine_decay``. As optax, any real values (negative, NaN or infinite ones warn),
    ``end > peak``, ``warmup_steps <= 0`` (no warmup: the decay starts at ``warmup_steps``) and
    non-integer step counts (a warning) are accepted.
    """
    check_signed("init_value", init_value)
    check_signed("peak_value", peak_value)
    check_signed("end_value", end_value)
    check_signed("exponent", exponent, "the value is infinite at the end of the decay")
    warmup_steps = accept_steps("warmup_steps", warmup_steps)
    decay_steps = accept_steps("decay_steps", decay_steps)
    if not decay_steps - warmup_steps > 0:
        raise ValueError(
            f"decay_steps={decay_steps!r}: expected more than warmup_steps={warmup_steps!r} "
            "(optax raises too)"
        )
    alpha = 0.0 if peak_value == 0.0 else end_value / peak_value
    with warnings.catch_warnings():  # the values were warned about above, once
        warnings.simplefilter("ignore", UserWarning)
        warmup = linear(init_value, peak_value, warmup_steps)
        decay = cosine_decay(peak_value, decay_steps - warmup_steps, alpha, exponent)
        return join([warmup, decay], [warmup_steps])
