"""Gradient clipping paradigms side by side (C4.4).

All four compute the same global L2 norm ``||g|| = sqrt(sum_leaves sum |g|^2)`` (PyTorch reaches it
as the norm of the per-leaf norms); they differ in how the factor is applied:

* ``clip_by_global_norm`` (optax/TF result): ``g * max_norm / max(||g||, max_norm)``
* ``clip_grad_norm_torch``: ``g * min(1, max_norm / (||g|| + eps))`` (always multiplies)
* ``clip_by_global_norm_tf``: ``g * clip_norm * min(1/||g||, 1/clip_norm)`` (TF's formula)
* ``clip_by_norm_per_leaf``: each leaf by its own norm, ``g_i * m / max(||g_i||, m)``
"""

from __future__ import annotations

import operator
from typing import Any

import jax
import jax.numpy as jnp
import optax

from jaxparadigm.optim.hyperparams import check_number
from jaxparadigm.optim.param_dtypes import abs_sq


def _empty(params):
    del params
    return optax.EmptyState()


def _sum_sq(x: jax.Array) -> jax.Array:
    """``sum |x|^2`` of one leaf (complex leaves: ``(conj(x) x).real``, as ``optax.tree.norm``)."""
    return jnp.sum(abs_sq(x) if jnp.iscomplexobj(x) else jnp.square(x))


def global_norm(tree: Any) -> jax.Array:
    """``sqrt(sum over leaves of sum(|leaf|**2))`` (C4.4); same reduction order as ``optax.tree.norm``."""
    sums = jax.tree.map(_sum_sq, tree)
    return jnp.sqrt(jax.tree.reduce(operator.add, sums, initializer=0))


def _scale_all(tree: Any, factor: jax.Array) -> Any:
    return jax.tree.map(lambda t: t * factor.astype(t.dtype), tree)


def clip_by_global_norm(max_norm: float) -> optax.GradientTransformation:
    """Rescale so the global norm is at most ``max_norm`` (optax semantics, C4.4).

    ``g <- g * (max_norm / max(||g||, max_norm))``: one scalar factor (exactly 1.0 when
    ``||g|| <= max_norm``, so small gradients are unchanged), one multiply per leaf that XLA fuses
    into the consumer; no per-leaf select.
    """
    check_number("max_norm", max_norm, low=0.0, low_open=True)

    def update_fn(updates, state, params=None):
        del params
        norm = global_norm(updates)
        factor = max_norm / jnp.maximum(norm, max_norm)
        return _scale_all(updates, factor), state

    return optax.GradientTransformation(_empty, update_fn)


def clip_grad_norm_torch(max_norm: float, eps: float = 1e-6) -> optax.GradientTransformation:
    """PyTorch ``clip_grad_norm_`` (C4.4): ``g <- g * min(1, max_norm / (||g|| + eps))``.

    The total norm is the L2 norm of the per-leaf L2 norms (torch's "per-layer norms aggregated"),
    which equals the global norm up to rounding (norms accumulate in float32 whatever the gradient
    dtype). Because of ``eps`` the factor is applied always,
    shrinking even gradients whose norm is just below ``max_norm``.
    """
    check_number("max_norm", max_norm, low=0.0, low_open=True)
    check_number("eps", eps, low=0.0)

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

    As in TF, an infinite norm gives a NaN factor (``+ (n - n)``) so the overflow is visible.
    """
    check_number("clip_norm", clip_norm, low=0.0, low_open=True)

    def update_fn(updates, state, params=None):
        del params
        norm = global_norm(updates)
        factor = clip_norm * jnp.minimum(1.0 / norm, 1.0 / clip_norm)
        factor = factor + (norm - norm)
        return _scale_all(updates, factor), state

    return optax.GradientTransformation(_empty, update_fn)


def clip_by_norm_per_leaf(max_norm: float) -> optax.GradientTransformation:
    """Clip each leaf by its own L2 norm (``tf.clip_by_norm`` per tensor, C4.4).

    ``g_i <- g_i * max_norm / max(||g_i||, max_norm)``: a different paradigm from global clipping,
    since the relative sizes of the leaves change.
    """
    check_number("max_norm", max_norm, low=0.0, low_open=True)

    def clip_leaf(t):
        norm = jnp.sqrt(_sum_sq(t))
        return t * (max_norm / jnp.maximum(norm, max_norm)).astype(t.dtype)

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
