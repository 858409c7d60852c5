"""Optax-style schedules ``count -> value`` that survive any step count (C4.3).

Each schedule clamps its count before using it, so an int32 count anywhere in
``[0, 2**31 - 1]``, a wrapped negative int32 count, or a Python int beyond int32 (handled in
Python, never converted to int32) gives a finite value ``>= 0`` for non-negative arguments. On
non-negative int32 counts every schedule equals its optax counterpart exactly.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax.numpy as jnp
import numpy as np

from jaxparadigm.optim.hyperparams import check_int, check_number

Schedule = Callable[[Any], Any]


def is_host_int(count: Any) -> bool:
    """True for a Python/NumPy integer: a count that may exceed int32 and is clamped in Python."""
    return isinstance(count, (int, np.integer)) and not isinstance(count, bool)


def constant(value: float) -> Schedule:
    """``lr(t) = value`` for every ``t`` (C4.3). ``value`` must be finite and ``>= 0``."""
    check_number("value", value, low=0.0)
    return lambda count: value


def polynomial(
    init_value: float,
    end_value: float,
    power: float,
    transition_steps: int,
    transition_begin: int = 0,
) -> Schedule:
    """``lr(t) = (init - end) * (1 - c / T)**power + end`` with ``c = clip(t - begin, 0, T)`` (C4.3).

    TF's ``PolynomialDecay`` and optax's ``polynomial_schedule``; the clip is what keeps a
    wrapped (negative) counter from producing a negative rate.
    """
    check_number("init_value", init_value, low=0.0)
    check_number("end_value", end_value, low=0.0)
    check_number("power", power, low=0.0, low_open=True)
    check_int("transition_steps", transition_steps, low=1)
    check_int("transition_begin", transition_begin, low=0)

    def schedule(count):
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

    ``polynomial`` with ``power=1``; equals ``optax.linear_schedule``.
    """
    return polynomial(init_value, end_value, 1, transition_steps, transition_begin)


def cosine_decay(init_value: float, decay_steps: int, alpha: float = 0.0) -> Schedule:
    """``lr(t) = init * ((1 - alpha) * 0.5 * (1 + cos(pi * c / D)) + alpha)``, ``c = clip(t, 0, D)``.

    Loshchilov & Hutter, SGDR (2017); equals ``optax.cosine_decay_schedule`` (C4.3).
    """
    check_number("init_value", init_value, low=0.0)
    check_int("decay_steps", decay_steps, low=1)
    check_number("alpha", alpha, low=0.0, high=1.0)
    steps = float(decay_steps)

    def schedule(count):
        if is_host_int(count):
            count = float(count)
        count = jnp.minimum(jnp.maximum(count, 0), steps)
        cosine = 0.5 * (1 + jnp.cos(jnp.pi * count / steps))
        return init_value * ((1 - alpha) * cosine**1.0 + alpha)

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
) -> Schedule:
    """Linear warmup ``init -> peak`` over ``warmup_steps``, then cosine ``peak -> end`` (C4.3).

    ``decay_steps`` counts the warmup too (optax's ``warmup_cosine_decay_schedule``), so it must
    exceed ``warmup_steps``. ``alpha = end / peak``.
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
    decay = cosine_decay(peak_value, decay_steps - warmup_steps, alpha)
    return join([warmup, decay], [warmup_steps])
