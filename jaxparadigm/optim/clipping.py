"""Gradient clipping paradigms side by side (C4.4).

All four compute the same global L2 norm ``||g|| = sqrt(sum_leaves sum |g|^2)`` (PyTorch reaches it
as the norm of the per-leaf norms); they differ in how the factor is applied:

* ``clip_by_global_norm`` (optax's): ``g`` if ``||g|| < max_norm``, else ``(g / ||g||) * max_norm``
* ``clip_grad_norm_torch``: ``g * min(1, max_norm / (||g|| + eps))`` (always multiplies)
* ``clip_by_global_norm_tf``: ``g * clip_norm * min(1/||g||, 1/clip_norm)`` (TF's formula)
* ``clip_by_norm_per_leaf``: each leaf by its own norm, as optax's clip of that leaf alone

``global_norm`` and the two optax-style clips compute as optax does, op for op (per-leaf sums of
``re^2 + im^2`` reduced in tree order, then the per-leaf ``select`` and ``(g / n) * m``), so they
are bitwise equal to ``optax.clip_by_global_norm``; the torch and TF clips follow their own
formulas (their oracles).

As their peers (``optax.clip_by_global_norm``, ``torch.nn.utils.clip_grad_norm_``,
``tf.clip_by_global_norm``) none refuses a bound: ``max_norm <= 0``, NaN or ``inf`` are computed
with, and ``max_norm <= 0`` or NaN warns (0 zeroes the gradients, a negative bound flips them in
optax/torch and turns TF's clipping off, NaN makes them NaN).
"""

from __future__ import annotations

import math
import operator
from typing import Any

import jax
import jax.numpy as jnp
import optax

from jaxparadigm.optim.hyperparam_checks import accept_number, check_torch_range, is_host_zero


def _empty(params):
    del params
    return optax.EmptyState()


def _sum_sq(x: jax.Array) -> jax.Array:
    """``sum |x|^2`` of one leaf as ``optax.tree.norm`` computes it: ``sum(re^2 + im^2)``."""
    if jnp.iscomplexobj(x):
        return jnp.sum(jnp.square(x.real) + jnp.square(x.imag))
    return jnp.sum(jnp.square(x))


def global_norm(tree: Any) -> jax.Array:
    """``sqrt(sum over leaves of sum(|leaf|**2))`` (C4.4): ``optax.tree.norm``'s ops and reduction
    order (each leaf summed, the sums added in tree order from 0), so bitwise equal to it."""
    sums = jax.tree.map(_sum_sq, tree)
    return jnp.sqrt(jax.tree.reduce(operator.add, sums, initializer=0))


def _check_bound(name: str, value: Any, *, tf_formula: bool = False) -> None:
    """A clipping bound, accepted as every peer accepts it; ``<= 0`` or NaN warns, and ``inf``
    (no clipping) only in TF's formula, where ``inf * min(1/n, 0)`` is NaN."""

    def problem(m: float) -> str | None:
        if m == 0:
            return "a bound of 0 sets every gradient to 0 (or NaN for a zero gradient)"
        if m < 0:
            return "a negative bound is no clipping bound (optax and torch flip the gradients)"
        if tf_formula and m == float("inf"):
            return "TF's formula clip_norm * min(1/n, 1/clip_norm) is inf * 0 = NaN"
        return None

    accept_number(name, value, problem, warn_infinite=False)


def _clip_leaf(t: jax.Array, norm: jax.Array, max_norm: Any) -> jax.Array:
    """optax's clip of one leaf: ``t`` where ``norm < max_norm``, else ``(t / norm) * max_norm``
    (``inf``: no clipping; ``0`` or NaN: ``0/0`` or NaN), in the leaf's dtype."""
    return jax.lax.select(norm < max_norm, t, (t / norm.astype(t.dtype)) * max_norm)


def _scale_all(tree: Any, factor: jax.Array) -> Any:
    return jax.tree.map(lambda t: t * factor.astype(t.dtype), tree)


def clip_by_global_norm(max_norm: float) -> optax.GradientTransformation:
    """Rescale so the global norm is at most ``max_norm`` (``optax.clip_by_global_norm``, C4.4).

    ``g <- (g / ||g||) * max_norm`` when ``||g|| >= max_norm``, else unchanged, computed as optax
    computes it (a ``select`` per leaf), so the result is bitwise optax's at every step. Any bound
    optax takes gives optax's result (``inf``: no clipping).
    """
    _check_bound("max_norm", max_norm)

    def update_fn(updates, state, params=None):
        del params
        norm = global_norm(updates)
        return jax.tree.map(lambda t: _clip_leaf(t, norm, max_norm), updates), state

    return optax.GradientTransformation(_empty, update_fn)


def clip_grad_norm_torch(max_norm: float, eps: float = 1e-6) -> optax.GradientTransformation:
    """PyTorch ``clip_grad_norm_`` (C4.4): ``g <- g * min(1, max_norm / (||g|| + eps))``.

    The total norm is the L2 norm of the per-leaf L2 norms (torch's "per-layer norms aggregated"),
    which equals the global norm up to rounding (norms accumulate in float32 whatever the gradient
    dtype). Because of ``eps`` the factor is applied always,
    shrinking even gradients whose norm is just below ``max_norm``.

    ``max_norm`` is taken as torch takes it (any number; see the module docstring). ``eps`` is
    torch's fixed ``1e-6`` made an argument, so torch has no check to follow: a negative one is
    refused (``ValueError``), as it could make the denominator ``||g|| + eps`` zero.
    """
    _check_bound("max_norm", max_norm)
    check_torch_range("eps", eps, low=0.0)

    def update_fn(updates, state, params=None):
        del params
        leaves = jax.tree.leaves(updates)
        if not leaves:
            return updates, state
        as_wide = lambda x: x if jnp.iscomplexobj(x) else x.astype(jnp.float32)
        per_leaf = jnp.stack([jnp.linalg.norm(jnp.ravel(as_wide(x))) for x in leaves])
        total = jnp.linalg.norm(per_leaf)
        factor = jnp.minimum(max_norm / (total + eps), 1.0)
        return _scale_all(updates, factor), state

    return optax.GradientTransformation(_empty, update_fn)


def clip_by_global_norm_tf(clip_norm: float) -> optax.GradientTransformation:
    """TensorFlow ``tf.clip_by_global_norm`` (C4.4): ``g <- g * clip_norm * min(1/n, 1/clip_norm)``.

    As in TF, an infinite norm gives a NaN factor (``+ (n - n)``) so the overflow is visible, and
    ``1 / clip_norm`` is a tensor division (``clip_norm = 0``: ``inf``, so the factor is 0).
    """
    _check_bound("clip_norm", clip_norm, tf_formula=True)
    if is_host_zero(clip_norm):
        inverse: Any = math.copysign(math.inf, float(clip_norm))
    else:
        inverse = 1.0 / clip_norm

    def update_fn(updates, state, params=None):
        del params
        norm = global_norm(updates)
        factor = clip_norm * jnp.minimum(1.0 / norm, inverse)
        factor = factor + (norm - norm)
        return _scale_all(updates, factor), state

    return optax.GradientTransformation(_empty, update_fn)


def clip_by_norm_per_leaf(max_norm: float) -> optax.GradientTransformation:
    """Clip each leaf by its own L2 norm (``tf.clip_by_norm`` per tensor, C4.4).

    ``g_i <- (g_i / ||g_i||) * max_norm`` where ``||g_i|| >= max_norm``: a different paradigm
    from global clipping, since the relative sizes of the leaves change. Each leaf is clipped
    exactly as ``optax.clip_by_global_norm`` clips a tree of that leaf alone.
    """
    _check_bound("max_norm", max_norm)

    def clip_leaf(t):
        return _clip_leaf(t, jnp.sqrt(_sum_sq(t)), max_norm)

    def update_fn(updates, state, params=None):
        del params
        return jax.tree.map(clip_leaf, updates), state

    return optax.GradientTransformation(_empty, update_fn)


__all__ = [
    "clip_by_global_norm",
    "clip_by_global_norm_tf",
    "clip_by_norm_per_leaf",
    "clip_grad_norm_torch",
    "global_norm",
]
