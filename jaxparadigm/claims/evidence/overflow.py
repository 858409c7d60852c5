"""C4.3's evidence: the pure-JAX step counters of ``optim.schedules.overflow_demo`` beside PyTorch's
``LinearLR`` (Python-int ``last_epoch``, unbounded) at the same steps, and their Markdown table.

Used by the claim (``claims.c4_optim.c4_3``) and by the ``overflow`` task's report.
"""

from __future__ import annotations

from typing import NamedTuple

from jaxparadigm.optim.schedules import OverflowDemo, overflow_demo
from jaxparadigm.optim.schedules.overflow import INT32_MAX


class OverflowEvidence(NamedTuple):
    """The library's counters and rates (``demo``) beside PyTorch's ``LinearLR`` (C4.3).

    ``demo``: :func:`jaxparadigm.optim.schedules.overflow_demo`'s figures, one entry per step.
    ``torch_lr``/``torch_last_epoch``: ``torch.optim.lr_scheduler.LinearLR`` measured at the same
    steps (None when torch is not installed or not requested).
    """

    demo: OverflowDemo
    torch_lr: tuple[float, ...] | None
    torch_last_epoch: tuple[int, ...] | None

    def table(self) -> str:
        """The evidence as a Markdown table."""
        head = (
            "| step | naive int32 | safe int32 | lr unclamped (naive) | lr clamped (naive) "
            "| lr safe | lr python int | torch LinearLR | torch last_epoch |"
        )
        rows = [head, "|" + "---|" * 9]
        d = self.demo
        for i, step in enumerate(d.steps):
            torch_lr = "n/a" if self.torch_lr is None else f"{self.torch_lr[i]:.6g}"
            torch_ep = "n/a" if self.torch_last_epoch is None else str(self.torch_last_epoch[i])
            rows.append(
                f"| {step} | {d.naive_count[i]} | {d.safe_count[i]} "
                f"| {d.lr_unclamped[i]:.6g} | {d.lr_naive_clamped[i]:.6g} "
                f"| {d.lr_safe[i]:.6g} | {d.lr_python_int[i]:.6g} | {torch_lr} | {torch_ep} |"
            )
        return "\n".join(rows)


def torch_linear_lr(
    start: int,
    n: int,
    base_lr: float,
    start_factor: float,
    end_factor: float,
    total_iters: int,
) -> tuple[tuple[float, ...], tuple[int, ...]] | tuple[None, None]:
    """PyTorch's ``LinearLR`` lr and ``last_epoch`` for the ``n`` steps after ``start`` (C4.3).

    The warmup is first finished the ordinary way (``total_iters`` steps), then ``last_epoch`` is
    set to ``start``. ``(None, None)`` when torch is not installed.
    """
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


def overflow_evidence(
    *,
    window: int,
    base_lr: float,
    start_factor: float,
    end_factor: float,
    total_iters: int,
    with_torch: bool,
    center: int = INT32_MAX,
) -> OverflowEvidence:
    """:func:`~jaxparadigm.optim.schedules.overflow_demo` plus PyTorch's LinearLR (C4.3).

    The library steps its int32 counters from ``center - window`` over ``2 * window`` steps (and
    checks the arguments, ``ValueError``/``TypeError`` naming one); PyTorch's scheduler is stepped
    over the same steps when ``with_torch`` and torch is installed. The warmup is the claim's
    setting, so every argument but ``center`` (the int32 limit the claim is about) is explicit.
    """
    demo = overflow_demo(center, window, base_lr, start_factor, end_factor, total_iters)
    torch_lr, torch_epochs = (
        torch_linear_lr(center - window, 2 * window, base_lr, start_factor, end_factor, total_iters)
        if with_torch
        else (None, None)
    )
    return OverflowEvidence(demo, torch_lr=torch_lr, torch_last_epoch=torch_epochs)
