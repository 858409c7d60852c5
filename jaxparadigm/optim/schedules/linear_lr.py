"""PyTorch's ``LinearLR`` warmup as a closed-form, clamped schedule (C4.3)."""

from __future__ import annotations

import math

import jax.numpy as jnp

from jaxparadigm.optim.hyperparam_checks import check_torch_range, host_number, warn_user
from jaxparadigm.optim.schedules.decay import Schedule, is_host_int, sanitize_count


def linear_lr(
    base_lr: float,
    start_factor: float = 1.0 / 3.0,
    end_factor: float = 1.0,
    total_iters: int = 5,
) -> Schedule:
    """``lr(t) = base_lr * (s + (e - s) * clip(t, 0, K) / N)`` (``lr_scheduler.LinearLR``).

    ``s = start_factor``, ``e = end_factor``, ``N = total_iters`` and ``K = floor(N)``: torch's
    recursion stops updating once its epoch exceeds ``N``, so a non-integer ``N`` never reaches
    ``e``, and ``N <= 0`` holds ``base_lr * s`` for ever; both are taken, as torch takes them, with
    a ``UserWarning``. Torch computes the value recursively with an unbounded Python-int
    ``last_epoch``; here the count is clamped to ``[0, K]``, so neither a wrapped int32 counter
    nor a huge Python int can make the rate negative (C4.3). NaN counts follow ``sanitize_count``.

    The other arguments are checked as torch checks them (torch is this schedule's oracle):
    ``0 <= base_lr`` (the optimiser's ``lr``; ``inf`` warns), ``0 < s <= 1``, ``0 <= e <= 1``
    (torch's tests let a NaN factor through: so do we, with a ``UserWarning``); anything torch
    refuses raises ``ValueError``.
    """
    if math.isinf(check_torch_range("base_lr", base_lr, low=0.0)):
        warn_user(f"base_lr={base_lr!r}: accepted (as torch), but every rate is infinite")
    _torch_factor("start_factor", start_factor, lambda x: x > 1.0 or x <= 0.0, "(0.0, 1.0]")
    _torch_factor("end_factor", end_factor, lambda x: x > 1.0 or x < 0.0, "[0.0, 1.0]")
    iters = host_number("total_iters", total_iters)
    if iters is None or math.isnan(iters) or isinstance(total_iters, bool):
        raise TypeError(f"total_iters={total_iters!r}: expected a number of steps")
    if math.isinf(iters):
        raise ValueError(f"total_iters={total_iters!r}: expected a finite number of steps")
    if iters <= 0:
        warn_user(
            f"total_iters={total_iters!r}: accepted (as torch), but the rate stays at "
            f"base_lr * start_factor for ever"
        )

        def held(count):
            sanitize_count(count)
            return base_lr * start_factor

        return held
    last = math.floor(iters)
    if last != iters:
        warn_user(
            f"total_iters={total_iters!r}: accepted (as torch), but it is not an integer: the "
            f"rate stops at step {last} and never reaches base_lr * end_factor"
        )

    def schedule(count):
        count = sanitize_count(count)
        if is_host_int(count):
            count = jnp.asarray(min(max(int(count), 0), last))
        else:
            count = jnp.clip(count, 0, last)
        return base_lr * (start_factor + (end_factor - start_factor) * count / total_iters)

    return schedule


def _torch_factor(name: str, value: float, refused, expected: str) -> None:
    """torch's own test of a LinearLR factor: ``refused(x)`` raises ``ValueError``; NaN passes
    torch's comparisons, so it is taken with a warning."""
    number = host_number(name, value)
    if number is None:
        raise TypeError(f"{name}={value!r}: expected a number known on the host")
    if refused(number):
        raise ValueError(f"{name}={value!r}: expected a value in {expected} (torch refuses it too)")
    if math.isnan(number):
        warn_user(f"{name}={value!r}: accepted (as torch), but every rate is NaN")
