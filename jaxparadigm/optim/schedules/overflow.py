"""What a step counter does past ``2**31 - 1``, measured rather than asserted (C4.3).

Two int32 counters run side by side from ``center - window``: one incremented with a plain ``+ 1``
(wraps to ``-2**31``) and one incremented with ``safe_increment`` (saturates). A LinearLR warmup is
evaluated on each, on the true Python-int step, and in torch's unclamped closed form on the naive
counter. PyTorch's own ``LinearLR`` beside it is claim evidence:
``jaxparadigm.claims.evidence.overflow``.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxparadigm.common.numbers import check_int
from jaxparadigm.optim.counters import safe_increment
from jaxparadigm.optim.schedules.linear_lr import linear_lr

INT32_MAX = 2**31 - 1


class OverflowDemo(NamedTuple):
    """Per-step figures for C4.3 (one entry per step; ``steps`` are the true step numbers).

    ``naive_count``/``safe_count``: int32 counters after ``+ 1`` / ``safe_increment``.
    ``lr_unclamped``: torch's closed form ``base*(s + (e-s)*min(N, c)/N)`` on the naive counter.
    ``lr_naive_clamped``: our clamped ``linear_lr`` on the naive counter (warmup restarts).
    ``lr_safe``: ``linear_lr`` on the saturating counter. ``lr_python_int``: ``linear_lr`` on the
    true Python-int step.
    """

    steps: tuple[int, ...]
    naive_count: tuple[int, ...]
    safe_count: tuple[int, ...]
    lr_unclamped: tuple[float, ...]
    lr_naive_clamped: tuple[float, ...]
    lr_safe: tuple[float, ...]
    lr_python_int: tuple[float, ...]


def _floats(x: jax.Array) -> tuple[float, ...]:
    return tuple(float(v) for v in np.asarray(x))


def _ints(x: jax.Array) -> tuple[int, ...]:
    return tuple(int(v) for v in np.asarray(x))


def _step_counters(start: int, n: int) -> tuple[jax.Array, jax.Array]:
    """``n`` steps of a plain ``+ 1`` int32 counter and a ``safe_increment`` one from ``start``."""

    def tick(
        carry: tuple[jax.Array, jax.Array], _: None
    ) -> tuple[tuple[jax.Array, jax.Array], tuple[jax.Array, jax.Array]]:
        naive, safe = carry
        naive, safe = naive + jnp.int32(1), safe_increment(safe)
        return (naive, safe), (naive, safe)

    init = (jnp.asarray(start, jnp.int32), jnp.asarray(start, jnp.int32))
    _, (naive, safe) = jax.lax.scan(tick, init, None, length=n)
    return naive, safe


def overflow_demo(
    center: int = INT32_MAX,
    window: int = 4,
    base_lr: float = 1e-3,
    start_factor: float = 1.0 / 3.0,
    end_factor: float = 1.0,
    total_iters: int = 5,
) -> OverflowDemo:
    """Step two int32 counters across ``center`` and evaluate a LinearLR warmup on each (C4.3).

    Counters start at ``center - window`` and take ``2 * window`` steps. Expected with the
    defaults: the naive int32 counter wraps to ``-2**31`` and the unclamped formula goes negative;
    ``safe_increment`` stays at ``2**31 - 1`` with ``lr = base_lr * end_factor``.
    """
    window = check_int("window", window, 1, error=ValueError, type_error=TypeError)
    total_iters = check_int("total_iters", total_iters, 1, error=ValueError, type_error=TypeError)
    low = window + total_iters  # the counters start at center - window, past the warmup
    center = check_int("center", center, low, INT32_MAX, error=ValueError, type_error=TypeError)
    start = center - window
    naive, safe = _step_counters(start, 2 * window)
    schedule = linear_lr(base_lr, start_factor, end_factor, total_iters)
    unclamped = base_lr * (
        start_factor + (end_factor - start_factor) * jnp.minimum(total_iters, naive) / total_iters
    )
    steps = tuple(range(start + 1, start + 2 * window + 1))
    return OverflowDemo(
        steps=steps,
        naive_count=_ints(naive),
        safe_count=_ints(safe),
        lr_unclamped=_floats(unclamped),
        lr_naive_clamped=_floats(schedule(naive)),
        lr_safe=_floats(schedule(safe)),
        lr_python_int=tuple(float(schedule(s)) for s in steps),
    )
