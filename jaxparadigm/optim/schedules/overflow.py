"""What a step counter does past ``2**31 - 1``, measured rather than asserted (C4.3).

Three counters run side by side from ``center - window``: an int32 counter incremented with a plain
``+ 1`` (wraps to ``-2**31``), one incremented with ``safe_increment`` (saturates), and PyTorch's
Python-int ``last_epoch`` (unbounded). A LinearLR warmup is evaluated on each.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxparadigm.optim.counters import safe_increment
from jaxparadigm.optim.hyperparams import check_int
from jaxparadigm.optim.schedules.linear_lr import linear_lr

INT32_MAX = 2**31 - 1


class OverflowDemo(NamedTuple):
    """Per-step evidence for C4.3 (one entry per step; ``steps`` are the true step numbers).

    ``naive_count``/``safe_count``: int32 counters after ``+ 1`` / ``safe_increment``.
    ``lr_unclamped``: torch's closed form ``base*(s + (e-s)*min(N, c)/N)`` on the naive counter.
    ``lr_naive_clamped``: our clamped ``linear_lr`` on the naive counter (warmup restarts).
    ``lr_safe``: ``linear_lr`` on the saturating counter. ``lr_python_int``: ``linear_lr`` on the
    true Python-int step. ``torch_lr``/``torch_last_epoch``: ``torch.optim.lr_scheduler.LinearLR``
    measured at the same steps (None when torch is not installed or not requested).
    """

    steps: tuple[int, ...]
    naive_count: tuple[int, ...]
    safe_count: tuple[int, ...]
    lr_unclamped: tuple[float, ...]
    lr_naive_clamped: tuple[float, ...]
    lr_safe: tuple[float, ...]
    lr_python_int: tuple[float, ...]
    torch_lr: tuple[float, ...] | None
    torch_last_epoch: tuple[int, ...] | None

    def table(self) -> str:
        """The evidence as a Markdown table."""
        head = (
            "| step | naive int32 | safe int32 | lr unclamped (naive) | lr clamped (naive) "
            "| lr safe | lr python int | torch LinearLR | torch last_epoch |"
        )
        rows = [head, "|" + "---|" * 9]
        for i, step in enumerate(self.steps):
            torch_lr = "n/a" if self.torch_lr is None else f"{self.torch_lr[i]:.6g}"
            torch_ep = "n/a" if self.torch_last_epoch is None else str(self.torch_last_epoch[i])
            rows.append(
                f"| {step} | {self.naive_count[i]} | {self.safe_count[i]} "
                f"| {self.lr_unclamped[i]:.6g} | {self.lr_naive_clamped[i]:.6g} "
                f"| {self.lr_safe[i]:.6g} | {self.lr_python_int[i]:.6g} | {torch_lr} | {torch_ep} |"
            )
        return "\n".join(rows)


def _torch_linear_lr(start: int, n: int, base_lr, start_factor, end_factor, total_iters):
    try:
        import torch
    except ImportError:
        return None, None
    param = torch.zeros(1, requires_grad=True)
    opt = torch.optim.SGD([param], lr=base_lr)
    sched = torch.optim.lr_scheduler.LinearLR(
        opt, start_factor=start_factor, end_factor=end_factor, total_iters=total_iters
    )
    for _ in range(total_iters):  # finish the warmup the ordinary way
        opt.step()
        sched.step()
    sched.last_epoch = start  # then jump to just before the int32 limit
    lrs, epochs = [], []
    for _ in range(n):
        opt.step()
        sched.step()
        lrs.append(float(sched.get_last_lr()[0]))
        epochs.append(int(sched.last_epoch))
    return tuple(lrs), tuple(epochs)


def overflow_demo(
    center: int = INT32_MAX,
    window: int = 4,
    base_lr: float = 1e-3,
    start_factor: float = 1.0 / 3.0,
    end_factor: float = 1.0,
    total_iters: int = 5,
    with_torch: bool = True,
) -> OverflowDemo:
    """Step three counters across ``center`` and evaluate a LinearLR warmup on each (C4.3).

    Counters start at ``center - window`` and take ``2 * window`` steps. Expected with the
    defaults: the naive int32 counter wraps to ``-2**31`` and the unclamped formula goes negative;
    ``safe_increment`` stays at ``2**31 - 1`` with ``lr = base_lr * end_factor``.
    """
    check_int("window", window, low=1)
    check_int("center", center, low=window + total_iters)
    if center > INT32_MAX:
        raise ValueError(f"center={center!r}: expected <= 2**31 - 1 (int32 counters)")
    start = center - window
    n = 2 * window

    def tick(carry, _):
        naive, safe = carry
        naive, safe = naive + jnp.int32(1), safe_increment(safe)
        return (naive, safe), (naive, safe)

    init = (jnp.asarray(start, jnp.int32), jnp.asarray(start, jnp.int32))
    _, (naive, safe) = jax.lax.scan(tick, init, None, length=n)
    schedule = linear_lr(base_lr, start_factor, end_factor, total_iters)
    unclamped = base_lr * (
        start_factor + (end_factor - start_factor) * jnp.minimum(total_iters, naive) / total_iters
    )
    steps = tuple(range(start + 1, start + n + 1))
    torch_lr, torch_epochs = (
        _torch_linear_lr(start, n, base_lr, start_factor, end_factor, total_iters)
        if with_torch
        else (None, None)
    )
    as_floats = lambda x: tuple(float(v) for v in np.asarray(x))
    return OverflowDemo(
        steps=steps,
        naive_count=tuple(int(v) for v in np.asarray(naive)),
        safe_count=tuple(int(v) for v in np.asarray(safe)),
        lr_unclamped=as_floats(unclamped),
        lr_naive_clamped=as_floats(schedule(naive)),
        lr_safe=as_floats(schedule(safe)),
        lr_python_int=tuple(float(schedule(s)) for s in steps),
        torch_lr=torch_lr,
        torch_last_epoch=torch_epochs,
    )
