"""Chapter 2.2 experiment: the lifetime of tensors saved for backward (C2.2).

PyTorch runs the article's ``MyFunction`` with a weakref on the saved input (when installed); our
``autodiff.tape`` is run the same way and reported beside it, and ``autodiff.Function`` shows that
in JAX the saved tensors are exactly the ``custom_vjp`` residuals."""

from __future__ import annotations

import gc
import weakref
from typing import Any

import jax.numpy as jnp

from jaxparadigm.autodiff import Function
from jaxparadigm.autodiff.tape import Var, saved_tensors_report
from jaxparadigm.claims.ledger import experiment
from jaxparadigm.claims.torch_side import NOT_MEASURED, measured, torch_or_none


class _Double(Function):
    """y = 2 x, saving x (as the article's MyFunction does)."""

    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        ctx.save_for_backward(x)
        return x * 2

    @staticmethod
    def backward(ctx: Any, g: Any) -> tuple[Any]:
        return (g * 2,)


class _DoubleNoSave(Function):
    """y = 2 x, saving nothing (the backward does not need x)."""

    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        return x * 2

    @staticmethod
    def backward(ctx: Any, g: Any) -> tuple[Any]:
        return (g * 2,)


@experiment(
    "C2.2",
    "Tensors saved for backward are kept alive by the graph and released once backward has run.",
)
def c2_2() -> dict[str, Any]:
    x = Var(jnp.linspace(-1.0, 1.0, 256), requires_grad=True)
    y = (x.exp() * x).sum()
    before = saved_tensors_report(y)
    y.backward()
    after = saved_tensors_report(y)
    second_backward_error = ""
    try:
        y.backward()
    except RuntimeError as exc:
        second_backward_error = str(exc).split(".")[0]
    x2 = Var(jnp.linspace(-1.0, 1.0, 256), requires_grad=True)
    y2 = (x2.exp() * x2).sum()
    y2.backward(retain_graph=True)
    retained = saved_tensors_report(y2)
    arg = jnp.ones((64, 64), jnp.float32)
    ev: dict[str, Any] = {
        "tape_saved_before_backward": before.count,
        "tape_saved_bytes_before": before.nbytes,
        "tape_saved_after_backward": after.count,
        "tape_saved_after_retain_graph": retained.count,
        "second_backward_error": second_backward_error,
        "function_residual_bytes_saving_x": _Double.residual_report(arg).nbytes,
        "function_residual_bytes_no_save": _DoubleNoSave.residual_report(arg).nbytes,
        "torch_saved_alive_before_backward": NOT_MEASURED,
        "torch_saved_alive_after": NOT_MEASURED,
    }
    torch = torch_or_none()
    if torch is not None:  # the article's MyFunction; a weakref watches the saved input
        ev.update(_torch_saved_lifetime(torch))
    return ev


def _torch_saved_lifetime(torch) -> dict:
    class MyFunction(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            ctx.save_for_backward(x)
            return x * 2

        @staticmethod
        def backward(ctx, grad_out):
            (x,) = ctx.saved_tensors
            return grad_out * 2

    leaf = torch.randn(256, requires_grad=True)
    h = leaf.exp()
    ref = weakref.ref(h)
    out = MyFunction.apply(h).sum()
    del h
    gc.collect()
    alive_before = ref() is not None
    out.backward()
    gc.collect()
    return {
        "torch_saved_alive_before_backward": alive_before,
        "torch_saved_alive_after": ref() is not None,
    }


def _tape_sentence(ev) -> str:
    kept = ev["tape_saved_before_backward"] > 0 and ev["tape_saved_after_retain_graph"] > 0
    released = ev["tape_saved_after_backward"] == 0
    if kept and released:
        error = ev["second_backward_error"]
        return (
            f"Our tape held {ev['tape_saved_before_backward']} saved arrays "
            f"({ev['tape_saved_bytes_before']} B) until backward and none after (retain_graph kept "
            f"{ev['tape_saved_after_retain_graph']})"
            + (f"; a second backward raises ({error!r})." if error else ".")
        )
    return (
        f"Our tape did NOT behave so: {ev['tape_saved_before_backward']} saved before backward, "
        f"{ev['tape_saved_after_backward']} after, {ev['tape_saved_after_retain_graph']} with "
        "retain_graph."
    )


def _residual_sentence(ev) -> str:
    saving, none = ev["function_residual_bytes_saving_x"], ev["function_residual_bytes_no_save"]
    if none < saving:
        return (
            f"In JAX the saved tensors are exactly the custom_vjp residuals: {saving} B with "
            f"save_for_backward vs {none} B without."
        )
    return f"JAX residuals did not shrink without save_for_backward ({saving} B vs {none} B)."


@c2_2.decide
def _(ev):
    """Decided on PyTorch only: ``holds`` when the tensor saved by the article's MyFunction was
    alive before backward and dead after it, ``fails`` otherwise; ``conditional`` ("PyTorch side not
    measured") without torch. Our tape and JAX residual figures are reported, never decisive (the
    tape is our model of PyTorch)."""
    ours = f"{_tape_sentence(ev)} {_residual_sentence(ev)}"
    alive_before, alive_after = (
        ev["torch_saved_alive_before_backward"],
        ev["torch_saved_alive_after"],
    )
    if not (measured(alive_before) and measured(alive_after)):
        return "conditional", f"PyTorch side not measured. {ours}"
    if alive_before is True and alive_after is False:
        return "holds", (
            f"PyTorch's saved tensor was alive until backward and freed after it. {ours}"
        )
    return "fails", (
        f"PyTorch's saved tensor was {'alive' if alive_before else 'already freed'} before "
        f"backward and {'still alive' if alive_after else 'freed'} after it. {ours}"
    )
