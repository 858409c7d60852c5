"""Stochastic gradient descent with optional (Nesterov) momentum and L2 weight decay (C4.1).

An SGD step is ``p <- p - lr * g``; parameters whose gradient is None are skipped (their update
is None and their momentum buffer is left untouched), as PyTorch skips ``p.grad is None``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import optax

from jaxparadigm.optim.hyperparam_checks import (
    check_momentum,
    check_nesterov,
    check_weight_decay,
    is_host_zero,
    storage_dtype,
    warn_value,
)
from jaxparadigm.optim.learning_rate import scale_by_learning_rate
from jaxparadigm.optim.param_dtypes import coefficient, require_inexact
from jaxparadigm.optim.weight_decay import add_decayed_weights


class TraceState(NamedTuple):
    """Momentum buffer ``b`` (same structure and dtype as the params)."""

    trace: Any


def momentum_update(
    updates: Any, trace_tree: Any, decay: Any, nesterov: bool, accumulator_dtype: Any = None
) -> tuple[Any, Any]:
    """``b <- g + decay * b``; returns (``b`` or ``g + decay * b`` if ``nesterov``, new buffers).

    ``decay`` is a Python number (static) or a float32 array (live). The new buffers are stored
    in ``accumulator_dtype`` (None: as computed; a real dtype keeps the real part, as optax's
    cast). Leaves whose gradient is None keep their buffer and get a None update. Integer
    updates raise ``TypeError``.
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
        lambda t, old: old if t is None else _store(t, accumulator_dtype),
        new_trace,
        trace_tree,
        is_leaf=is_none,
    )
    return out, kept


def _store(t: jax.Array, dtype: Any) -> jax.Array:
    if dtype is None:
        return t
    if jax.numpy.iscomplexobj(t) and not jax.numpy.issubdtype(dtype, jax.numpy.complexfloating):
        t = t.real
    return t.astype(dtype)


def init_trace(params: Any, accumulator_dtype: Any = None) -> TraceState:
    """Zero momentum buffers shaped like ``params``, in ``accumulator_dtype`` (None: the params'
    dtype); refuses integer params; warns (as adam's ``mu_dtype``) when a real dtype would drop
    the imaginary part of complex params' momentum (C4.1)."""
    require_inexact("params", params)
    real = accumulator_dtype is not None and not jax.numpy.issubdtype(
        accumulator_dtype, jax.numpy.complexfloating
    )
    if real and any(jax.numpy.iscomplexobj(p) for p in jax.tree.leaves(params)):
        warn_value(
            "accumulator_dtype",
            jax.numpy.dtype(accumulator_dtype).name,
            "complex params keep only the real part of their momentum (as optax's cast)",
        )
    return TraceState(
        trace=jax.tree.map(lambda p: jax.numpy.zeros_like(p, dtype=accumulator_dtype), params)
    )


def trace(
    decay: Any, nesterov: bool = False, accumulator_dtype: Any = None
) -> optax.GradientTransformation:
    """Momentum (C4.1): ``b <- g + decay * b``; output ``b`` (or ``g + decay * b`` if ``nesterov``).

    Same recursion as ``torch.optim.SGD`` with ``dampening=0`` and as ``optax.trace`` (complex
    params included), buffers stored in ``accumulator_dtype`` (None: the params' dtype; as
    optax, any of float32/bfloat16/float16/complex64 for real or complex params, a real one for
    complex params keeping the real part). As ``optax.trace``, any real ``decay`` is taken
    (outside ``[0, 1)``: a ``UserWarning``). Integer params or updates raise ``TypeError``.
    """
    check_momentum("decay", decay)
    return _trace(decay, check_nesterov(nesterov), accumulator_dtype)


def _trace(decay: Any, nesterov: bool, accumulator_dtype: Any) -> optax.GradientTransformation:
    """``trace`` with ``decay`` and ``nesterov`` already checked (under the caller's names)."""
    accumulator_dtype = storage_dtype("accumulator_dtype", accumulator_dtype)

    def init_fn(params):
        return init_trace(params, accumulator_dtype)

    def update_fn(updates, state, params=None):
        del params
        out, kept = momentum_update(updates, state.trace, decay, nesterov, accumulator_dtype)
        return out, TraceState(trace=kept)

    return optax.GradientTransformation(init_fn, update_fn)


def uses_momentum(momentum: Any) -> bool:
    """Whether ``sgd`` builds a momentum buffer: ``momentum`` is not None and not the number 0
    (``optax.sgd`` builds ``trace(0)`` for an explicit 0, whose updates are those of plain SGD)."""
    return momentum is not None and not is_host_zero(momentum)


def uses_weight_decay(weight_decay: Any) -> bool:
    """Whether ``sgd`` adds L2 decay: ``weight_decay`` is not None and not the number 0."""
    return weight_decay is not None and not is_host_zero(weight_decay)


def sgd(
    learning_rate: float | Callable[[Any], Any] | None,
    momentum: Any = None,
    nesterov: bool = False,
    accumulator_dtype: Any = None,
    *,
    weight_decay: Any = 0.0,
) -> optax.GradientTransformation:
    """SGD (C4.1): ``g' = g + wd * p``; ``b <- momentum * b + g'``; ``p <- p - lr * b``.

    With ``nesterov`` the step uses ``g' + momentum * b``. ``momentum`` None or 0 is plain
    ``p <- p - lr * (g + wd * p)``. Matches ``torch.optim.SGD`` (dampening 0) and, for
    ``weight_decay=0``, ``optax.sgd`` (``accumulator_dtype``: the momentum buffer's storage dtype,
    as optax's; unused without momentum). Positional arguments are optax's, in optax's order;
    ``weight_decay`` (torch's L2 term, not in ``optax.sgd``) is keyword-only. As optax, any real
    ``momentum`` and ``weight_decay`` are taken (a negative one, or a momentum >= 1, warns), and
    ``nesterov=True`` without momentum is plain SGD (with a ``UserWarning``: it has no effect).
    """
    with_momentum = uses_momentum(momentum)
    nesterov = check_nesterov(nesterov)
    if nesterov and not with_momentum:
        warn_value(
            "nesterov", nesterov, f"it has no effect without momentum (momentum={momentum!r})"
        )
    parts = []
    if uses_weight_decay(weight_decay):
        parts.append(add_decayed_weights(weight_decay))  # checks (and warns about) the value
    elif weight_decay is not None:
        check_weight_decay("weight_decay", weight_decay)
    if momentum is not None:
        check_momentum("momentum", momentum)
    if with_momentum:
        parts.append(_trace(momentum, nesterov, accumulator_dtype))
    else:
        storage_dtype("accumulator_dtype", accumulator_dtype)
    parts.append(scale_by_learning_rate(learning_rate))
    return optax.chain(*parts)
