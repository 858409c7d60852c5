"""Adam exactly as ``torch.optim.Adam`` writes it (C4.2).

Torch folds the bias corrections differently from optax: the step is
``p <- p - (lr / bc1) * m / (sqrt(v) / sqrt(bc2) + eps)`` with ``bc_i = 1 - b_i^t``, so ``eps`` is
added to the *uncorrected-scale* denominator. Weight decay is classic L2 (``g <- g + wd * p``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from jaxparadigm.optim.counters import safe_increment
from jaxparadigm.optim.hyperparam_checks import (
    check_learning_rate,
    check_torch_range,
    warn_value,
)
from jaxparadigm.optim.param_dtypes import require_inexact


class AdamTorchState(NamedTuple):
    """Torch-style Adam state: int32 ``count`` (``step``), ``mu`` (exp_avg), ``nu`` (exp_avg_sq)."""

    count: jax.Array  # type: ignore[assignment]  # field shadows tuple.count, as in optax states
    mu: Any
    nu: Any


def _is_none(x: Any) -> bool:
    return x is None


def _init_state(params: Any) -> AdamTorchState:
    """Zero moments shaped like ``params`` and a zero int32 step count."""
    require_inexact("params", params)
    # Two separate trees: sharing one buffer would break donation of the state.
    mu = jax.tree.map(jnp.zeros_like, params)
    nu = jax.tree.map(jnp.zeros_like, params)
    return AdamTorchState(count=jnp.zeros([], jnp.int32), mu=mu, nu=nu)


def _opmath(x: jax.Array) -> jax.Array:
    """``x`` in torch's "opmath" type: float32 for bfloat16/float16, else unchanged."""
    return x.astype(jnp.promote_types(x.dtype, jnp.float32))


def _l2_decay(updates: Any, params: Any, wd: float) -> Any:
    """torch's classic L2 weight decay ``g <- g + wd * p`` as ``grad.add(param, alpha=wd)``
    computes it: ``alpha`` in the gradient's dtype (torch's vectorised CPU kernel), the sum in
    opmath, one rounding; None gradients stay None."""
    if params is None:
        raise ValueError("adam_torch_style: params=None, expected params for weight decay")

    def decay(g: jax.Array, p: jax.Array) -> jax.Array:
        alpha = _opmath(jnp.asarray(wd, g.dtype))
        return (_opmath(g) + alpha * _opmath(p)).astype(g.dtype)

    return jax.tree.map(
        lambda g, p: None if g is None else decay(g, p),
        updates,
        params,
        is_leaf=_is_none,
    )


def _lerp(m: jax.Array, g: jax.Array, weight: float) -> jax.Array:
    """``torch.lerp(m, g, weight)`` as torch's kernel computes it: in opmath, ``m + w (g - m)``
    for ``|w| < 0.5`` and ``g - (g - m)(1 - w)`` otherwise, rounded once to ``m``'s dtype."""
    m32, g32 = _opmath(m), _opmath(g)
    if abs(weight) < 0.5:
        return (m32 + weight * (g32 - m32)).astype(m.dtype)
    return (g32 - (g32 - m32) * (1 - weight)).astype(m.dtype)


def _moments(updates: Any, state: AdamTorchState, b1: float, b2: float) -> tuple[Any, Any]:
    """``m <- lerp(m, g, 1-b1)``, ``v <- (b2 v) + (1-b2) g g``, at torch's rounding points (one
    per torch op, each computed in opmath); a None gradient keeps its moments.

    torch: ``exp_avg.lerp_(grad, 1 - beta1)``; ``exp_avg_sq.mul_(beta2).addcmul_(grad, grad,
    value=1 - beta2)``. In bfloat16, ``m + (1-b1)(g - m)`` rounded at every op was 1 to 4 ulps off
    torch's (the generated chains found updates 2.6% off torch's with ``b1 = 0``).
    """

    def second(g: jax.Array, v: jax.Array) -> jax.Array:
        decayed = (_opmath(v) * b2).astype(v.dtype)  # mul_
        g32 = _opmath(g)
        return (_opmath(decayed) + (1 - b2) * g32 * g32).astype(v.dtype)  # addcmul_

    mu = jax.tree.map(
        lambda g, m: m if g is None else _lerp(m, g, 1 - b1),
        updates,
        state.mu,
        is_leaf=_is_none,
    )
    nu = jax.tree.map(
        lambda g, v: v if g is None else second(g, v), updates, state.nu, is_leaf=_is_none
    )
    return mu, nu


def _direction(m: jax.Array, v: jax.Array, step_size: jax.Array, bc2_sqrt: jax.Array, eps: float):
    """``-step_size * m / denom`` with ``denom = (sqrt(v) / sqrt(bc2)) + eps``, rounded where torch
    rounds (``sqrt``, ``/``, ``add_``; ``addcdiv_`` in opmath), in ``m``'s dtype."""
    dtype = m.dtype
    root = jnp.sqrt(v)
    denom = (_opmath(root) / bc2_sqrt).astype(dtype)
    denom = (_opmath(denom) + eps).astype(dtype)
    return (-step_size * (_opmath(m) / _opmath(denom))).astype(dtype)  # value * (m / denom)


def _bias_correction(decay: float, t: jax.Array) -> jax.Array:
    """``1 - decay**t`` to float32 precision: ``-expm1(t * log(decay))`` with ``log`` in float64.

    torch takes ``1 - beta**step`` in Python floats. In float32 ``1 - 0.999**t`` cancels: 0.999
    itself rounds to 0.99900001, so ``1 - 0.999`` is off by 1.3e-5 relative, and every torch-style
    step with it.
    """
    log_decay = math.log(decay) if decay > 0 else -math.inf
    return -jnp.expm1(t * jnp.float32(log_decay))


def adam_torch_style(
    learning_rate: float | Callable[[Any], Any],
    b1: float = 0.9,
    b2: float = 0.999,
    eps: float = 1e-8,
    weight_decay: float = 0.0,
) -> optax.GradientTransformation:
    """``torch.optim.Adam`` (C4.2): ``g += wd p``; ``m <- b1 m + (1-b1) g``;
    ``v <- b2 v + (1-b2) g^2``; ``u = -(lr / (1 - b1^t)) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)``.

    ``learning_rate`` may be a schedule evaluated at the pre-increment count (as torch's scheduler
    sets the lr before the step). Returns the full update (already multiplied by ``-lr``).

    Arguments are checked as ``torch.optim.Adam`` checks them (this is torch's optimiser, and torch
    is its oracle), not as optax: ``0 <= lr``, ``0 <= eps``, ``0 <= b1, b2 < 1``,
    ``0 <= weight_decay`` (NaN refused, ``inf`` taken where torch takes it: an infinite
    ``learning_rate`` or ``weight_decay`` with a ``UserWarning``); anything torch refuses raises
    ``ValueError`` naming the argument.
    """
    learning_rate = check_learning_rate("learning_rate", learning_rate, torch_rules=True)
    b1 = check_torch_range("b1", b1, low=0.0, high=1.0, high_open=True)
    b2 = check_torch_range("b2", b2, low=0.0, high=1.0, high_open=True)
    eps = check_torch_range("eps", eps, low=0.0)
    wd = check_torch_range("weight_decay", weight_decay, low=0.0)
    for name, value in (("learning_rate", learning_rate), ("weight_decay", wd)):
        if not callable(value) and math.isinf(value):
            warn_value(name, value, "torch takes it too, but every step is infinite or NaN")

    def update_fn(
        updates: Any, state: AdamTorchState, params: Any = None
    ) -> tuple[Any, AdamTorchState]:
        require_inexact("updates", updates)
        if wd > 0.0:
            updates = _l2_decay(updates, params, wd)
        count = safe_increment(state.count)
        lr = learning_rate(state.count) if callable(learning_rate) else learning_rate
        t = count.astype(jnp.float32)
        bc1 = _bias_correction(b1, t)
        bc2_sqrt = jnp.sqrt(_bias_correction(b2, t))
        step_size = lr / bc1
        mu, nu = _moments(updates, state, b1, b2)
        new_updates = jax.tree.map(
            lambda g, m, v: (
                None if g is None else _direction(m, v, step_size, bc2_sqrt, eps).astype(g.dtype)
            ),
            updates,
            mu,
            nu,
            is_leaf=_is_none,
        )
        return new_updates, AdamTorchState(count=count, mu=mu, nu=nu)

    return optax.GradientTransformation(_init_state, update_fn)
