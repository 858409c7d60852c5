"""PyTorch's ``LinearLR`` warmup as a closed-form, clamped schedule (C4.3)."""

from __future__ import annotations

import jax.numpy as jnp

from jaxparadigm.optim.hyperparams import check_int, check_number
from jaxparadigm.optim.schedules.decay import Schedule, is_host_int, sanitize_count


def linear_lr(
    base_lr: float,
    start_factor: float = 1.0 / 3.0,
    end_factor: float = 1.0,
    total_iters: int = 5,
) -> Schedule:
    """``lr(t) = base_lr * (s + (e - s) * clip(t, 0, N) / N)`` (``torch.optim.lr_scheduler.LinearLR``).

    ``s = start_factor`` in (0, 1], ``e = end_factor`` in [0, 1], ``N = total_iters >= 1``. Torch
    computes the same value recursively with an unbounded Python-int ``last_epoch``; here the count
    is clamped to ``[0, N]``, so neither a wrapped int32 counter nor a huge Python int can make the
    rate negative (C4.3). NaN counts follow ``sanitize_count`` (host NaN refused, array NaN -> 0).
    """
    check_number("base_lr", base_lr, low=0.0)
    check_number("start_factor", start_factor, low=0.0, high=1.0, low_open=True)
    check_number("end_factor", end_factor, low=0.0, high=1.0)
    check_int("total_iters", total_iters, low=1)

    def schedule(count):
        count = sanitize_count(count)
        if is_host_int(count):
            count = jnp.asarray(min(max(int(count), 0), total_iters))
        else:
            count = jnp.clip(count, 0, total_iters)
        return base_lr * (start_factor + (end_factor - start_factor) * count / total_iters)

    return schedule
