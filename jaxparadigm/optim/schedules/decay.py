"""Optax-style schedules ``count -> value`` that survive any step count (C4.3).

Each schedule clamps its count before using it, so an int32 count anywhere in
``[0, 2**31 - 1]``, a wrapped negative int32 count, or a Python int beyond int32 (handled in
Python, never converted to int32) gives a finite value ``>= 0`` for non-negative arguments. On
non-negative int32 counts every schedule equals its optax counterpart exactly.

NaN counts (only a floating count can be NaN): a host NaN (Python float, NumPy scalar or array)
is refused with ``ValueError``; inside a JAX array (traced or not) a NaN count reads as ``0``, so
the schedule returns its first value instead of NaN. ``+inf`` reads as the end of the schedule and
``-inf`` as its start (the usual clamp). optax returns NaN for a NaN count.

Deliberate differences from optax (each pinned by a test in ``tests/optim``): negative values,
negative ``transition_steps``/``transition_begin`` and ``exponent <= 0`` are refused with
``ValueError`` (optax accepts them: a negative rate or an infinite one); ``transition_steps=0``
is accepted as in optax (a constant ``init_value``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxparadigm.optim.hyperparams import check_int, check_number

Schedule = Callable[[Any], Any]


def is_host_int(count: Any) -> bool:
    """True for a Python/NumPy integer: a count that may exceed int32 and is clamped in Python."""
    return isinstance(count, (int, np.integer)) and not isinstance(count, bool)


def sanitize_count(count: Any) -> Any:
    """The count a schedule uses (C4.3): host ints unchanged, NaN refused on the host, 0 in arrays.

    A Python/NumPy NaN raises ``ValueError`` naming ``count``; a NaN inside a floating JAX array
    (traced or concrete) becomes ``0`` with ``where(isnan(count), 0, count)``. Integer counts pass
    through untouched, so int32 counts compile to exactly optax's program.
    """
    if is_host_int(count):
        return count
    if isinstance(count, (float, np.floating, np.ndarray)):
        if np.issubdtype(np.asarray(count).dtype, np.floating) and np.isnan(count).any():
            raise ValueError(f"count={count!r}: expected a step count, got NaN")
        return count
    if isinstance(count, jax.Array) and jnp.issubdtype(count.dtype, jnp.floating):
        return jnp.where(jnp.isnan(count), jnp.zeros_like(count), count)
    return count


def constant(value: float) -> Schedule:
    """``lr(t) = value`` for every ``t`` (C4.3). ``value`` must be finite and ``>= 0``.

    A host NaN count is refused like in every other schedule (``sanitize_count``).
    """
    check_number("value", value, low=0.0)

    def schedule(count):
        sanitize_count(count)
        return value

    return schedule


def polynomial(
    init_value: float,
    end_value: float,
    power: float,
    transition_steps: int,
    transition_begin: int = 0,
) -> Schedule:
    """``lr(t) = (init - end) * (1 - c / T)**power + end`` with ``c = clip(t - begin, 0, T)`` (C4.3).

    TF's ``PolynomialDecay`` and optax's ``polynomial_schedule``; the clip is what keeps a
    wrapped (negative) counter from producing a negative rate. ``transition_steps=0`` gives the
    constant ``init_value`` (as optax); a negative ``transition_steps`` or ``transition_begin`` is
    refused (optax silently treats them as 0).
    """
    check_number("init_value", init_value, low=0.0)
    check_number("end_value", end_value, low=0.0)
    check_number("power", power, low=0.0, low_open=True)
    check_int("transition_steps", transition_steps, low=0)
    check_int("transition_begin", transition_begin, low=0)
    if transition_steps == 0:
        return constant(init_value)

    def schedule(count):
        count = sanitize_count(count)
        if is_host_int(count):
            count = jnp.asarray(min(max(int(count) - transition_begin, 0), transition_steps))
        else:
            count = jnp.clip(count - transition_begin, 0, transition_steps)
        frac = 1 - count / transition_steps
        return (init_value - end_value) * (frac**power) + end_value

    return schedule


def linear(
    init_value: float, end_value: float, transition_steps: int, transition_begin: int = 0
) -> Schedule:
    """``lr(t) = init + (end - init) * c / T`` with ``c = clip(t - begin, 0, T)`` (C4.3).

    ``polynomial`` with ``power=1``; equals ``optax.linear_schedule`` (``T=0``: constant ``init``).
    """
    return polynomial(init_value, end_value, 1, transition_steps, transition_begin)


def cosine_decay(
    init_value: float, decay_steps: int, alpha: float = 0.0, exponent: float = 1.0
) -> Schedule:
    """``lr(t) = init * ((1 - alpha) * (0.5 * (1 + cos(pi * c / D)))**exponent + alpha)``.

    ``c = clip(t, 0, D)``. Loshchilov & Hutter, SGDR (2017); equals
    ``optax.cosine_decay_schedule`` including its ``exponent`` (C4.3). ``exponent`` must be
    finite and ``> 0`` (optax accepts ``<= 0``, which gives a constant or an infinite rate).
    """
    check_number("init_value", init_value, low=0.0)
    check_int("decay_steps", decay_steps, low=1)
    check_number("alpha", alpha, low=0.0, high=1.0)
    # Checked, not converted: optax uses the value as given (``x**2`` and ``x**2.0`` differ in XLA).
    check_number("exponent", exponent, low=0.0, low_open=True)
    steps = float(decay_steps)

    def schedule(count):
        count = sanitize_count(count)
        if is_host_int(count):
            count = float(count)
        count = jnp.minimum(jnp.maximum(count, 0), steps)
        cosine = 0.5 * (1 + jnp.cos(jnp.pi * count / steps))
        return init_value * ((1 - alpha) * cosine**exponent + alpha)

    return schedule


def join(schedules: Sequence[Schedule], boundaries: Sequence[int]) -> Schedule:
    """Piecewise schedule: ``schedules[i](t - boundaries[i-1])`` once ``t >= boundaries[i-1]`` (C4.3).

    ``len(schedules) == len(boundaries) + 1``; boundaries are non-negative and non-decreasing.
    Equals ``optax.join_schedules``; Python int counts select the piece in Python.
    """
    schedules = list(schedules)
    boundaries = [check_int(f"boundaries[{i}]", b, low=0) for i, b in enumerate(boundaries)]
    if not schedules or not all(callable(s) for s in schedules):
        raise TypeError(f"schedules={schedules!r}: expected a non-empty sequence of callables")
    if len(schedules) != len(boundaries) + 1:
        raise ValueError(
            f"boundaries={boundaries!r}: expected {len(schedules) - 1} boundaries for "
            f"{len(schedules)} schedules"
        )
    if any(b1 > b2 for b1, b2 in zip(boundaries, boundaries[1:], strict=False)):
        raise ValueError(f"boundaries={boundaries!r}: expected non-decreasing values")

    def schedule(step):
        step = sanitize_count(step)
        if is_host_int(step):
            step = int(step)
            chosen, offset = schedules[0], 0
            for boundary, piece in zip(boundaries, schedules[1:], strict=True):
                if step >= boundary:
                    chosen, offset = piece, boundary
            return chosen(step - offset)
        output = schedules[0](step)
        for boundary, piece in zip(boundaries, schedules[1:], strict=True):
            output = jnp.where(step < boundary, output, piece(step - boundary))
        return output

    return schedule


def warmup_cosine_decay(
    init_value: float,
    peak_value: float,
    warmup_steps: int,
    decay_steps: int,
    end_value: float = 0.0,
    exponent: float = 1.0,
) -> Schedule:
    """Linear warmup ``init -> peak`` over ``warmup_steps``, then cosine ``peak -> end`` (C4.3).

    ``decay_steps`` counts the warmup too (optax's ``warmup_cosine_decay_schedule``), so it must
    exceed ``warmup_steps``. ``alpha = end / peak``; ``exponent`` as in ``cosine_decay``. Values
    must be ``>= 0`` and ``end <= peak`` (optax also accepts a negative ``end_value``).
    """
    check_number("init_value", init_value, low=0.0)
    check_number("peak_value", peak_value, low=0.0)
    check_number("end_value", end_value, low=0.0)
    check_int("warmup_steps", warmup_steps, low=0)
    check_int("decay_steps", decay_steps, low=1)
    if decay_steps <= warmup_steps:
        raise ValueError(
            f"decay_steps={decay_steps!r}: expected more than warmup_steps={warmup_steps!r}"
        )
    alpha = 0.0 if peak_value == 0.0 else end_value / peak_value
    if alpha > 1.0:
        raise ValueError(f"end_value={end_value!r}: expected <= peak_value={peak_value!r}")
    warmup = (
        linear(init_value, peak_value, warmup_steps) if warmup_steps > 0 else constant(init_value)
    )
    decay = cosine_decay(peak_value, decay_steps - warmup_steps, alpha, exponent)
    return join([warmup, decay], [warmup_steps])
