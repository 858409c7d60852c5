"""Stochastic gradient descent with optional (Nesterov) momentum and L2 weight decay (C4.1).

An SGD step is ``p <- p - lr * g``; parameters whose gradient is None are skipped (their update
is None and their momentum buffer is left untouched), as PyTorch skips ``p.grad is None``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import optax

from jaxparadigm.optim.hyperparams import check_number
from jaxparadigm.optim.learning_rate import scale_by_learning_rate
from jaxparadigm.optim.param_dtypes import coefficient, require_inexact
from jaxparadigm.optim.weight_decay import add_decayed_weights


class TraceState(NamedTuple):
    """Momentum buffer ``b`` (same structure and dtype as the params)."""

    trace: Any


def momentum_update(updates: Any, trace_tree: Any, decay: Any, nesterov: bool) -> tuple[Any, Any]:
    """``b <- g + decay * b``; returns (``b`` or ``g + decay * b`` if ``nesterov``, new buffers).

    ``decay`` is a Python number (static) or a float32 array (live). Leaves whose gradient is
    None keep their buffer and get a None update. Integer updates raise ``TypeError``.
    """
    require_inexact("updates", updates)
    is_none = lambda x: x is None
    f = lambda g, t: g + coefficient(decay, g.dtype) * t
    new_trace = jax.tree.map(
        lambda g, t: None if g is None else f(g, t), updates, trace_tree, is_leaf=is_none
    )
    if nesterov:
        out = jax.tree.map(
            lambda g, t: None if g is None else f(g, t), updates, new_trace, is_leaf=is_none
        )
    else:
        out = new_trace
    kept = jax.tree.map(
        lambda t, old: old if t is None else t, new_trace, trace_tree, is_leaf=is_none
    )
    return out, kept


def trace(decay: float, nesterov: bool = False) -> optax.GradientTransformation:
    """Momentum (C4.1): ``b <- g + decay * b``; output ``b`` (or ``g + decay * b`` if ``nesterov``).

    Same recursion as ``torch.optim.SGD`` with ``dampening=0`` and as ``optax.trace`` (complex
    params included). Integer params or updates raise ``TypeError``.
    """
    check_number("momentum", decay, low=0.0)
    if not isinstance(nesterov, bool):
        raise TypeError(f"nesterov={nesterov!r}: expected a bool")

    def init_fn(params):
        require_inexact("params", params)
        return TraceState(trace=jax.tree.map(jax.numpy.zeros_like, params))

    def update_fn(updates, state, params=None):
        del params
        out, kept = momentum_update(updates, state.trace, decay, nesterov)
        return out, TraceState(trace=kept)

    return optax.GradientTransformation(init_fn, update_fn)


def sgd(
    learning_rate: float | Callable[[Any], Any],
    momentum: float = 0.0,
    nesterov: bool = False,
    weight_decay: float = 0.0,
) -> optax.GradientTransformation:
    """SGD (C4.1): ``g' = g + wd * p``; ``b <- momentum * b + g'``; ``p <- p - lr * b``.

    With ``nesterov`` the step uses ``g' + momentum * b``. ``momentum=0`` is plain
    ``p <- p - lr * (g + wd * p)``. Matches ``torch.optim.SGD`` (dampening 0) and, for
    ``weight_decay=0``, ``optax.sgd``.
    """
    check_number("momentum", momentum, low=0.0)
    if nesterov and momentum == 0.0:
        raise ValueError("nesterov=True: requires momentum > 0 (got momentum=0.0)")
    parts = []
    if check_number("weight_decay", weight_decay, low=0.0) > 0.0:
        parts.append(add_decayed_weights(weight_decay))
    if momentum > 0.0:
        parts.append(trace(momentum, nesterov))
    parts.append(scale_by_learning_rate(learning_rate))
    return optax.chain(*parts)
