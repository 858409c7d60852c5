"""Lion (Chen et al. 2023, "Symbolic Discovery of Optimization Algorithms"), optax's formula (C4.1).

``u = sign((1 - b1) g + b1 m)``; ``m <- (1 - b2) g + b2 m`` (the momentum, stored in
``mu_dtype``); ``lion`` chains it with decoupled weight decay and the learning rate:
``p <- p - lr (u + wd p)``, as ``optax.lion`` (defaults ``b1=0.9``, ``b2=0.99``,
``weight_decay=1e-3``, ``mask=None``: the decay on the leaves ``mask`` selects). Every update
entry is +-lr (or 0) before weight decay, so Lion wants a learning rate 3-10x smaller than
AdamW's. Hyper-parameters are checked at construction as adam's are (``hyperparam_checks``'
policy for an argument optax takes): any real number, as optax; a non-number (a string) raises
``TypeError`` naming it; NaN, infinite, bool or ``b1``/``b2`` outside ``[0, 1]`` values warn.
Integer params or gradients raise ``TypeError``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from jaxparadigm.optim.counters import safe_increment
from jaxparadigm.optim.hyperparam_checks import accept_number, storage_dtype
from jaxparadigm.optim.learning_rate import scale_by_learning_rate
from jaxparadigm.optim.param_dtypes import require_inexact
from jaxparadigm.optim.weight_decay import add_decayed_weights

__all__ = ["ScaleByLionState", "lion", "scale_by_lion"]


class ScaleByLionState(NamedTuple):
    """The step count (int32, saturating) and the momentum ``mu`` (same structure as params)."""

    count: jax.Array  # type: ignore[assignment]  # field shadows tuple.count, as in optax states
    mu: Any


def _interpolation_problem(b: float) -> str | None:
    """Why a Lion ``b1``/``b2`` outside ``[0, 1]`` is surely a mistake (None inside)."""
    if 0.0 <= b <= 1.0:
        return None
    return "outside [0, 1] (1 - b) g + b m is no interpolation between gradient and momentum"


def scale_by_lion(
    b1: Any = 0.9, b2: Any = 0.99, mu_dtype: Any = None
) -> optax.GradientTransformation:
    """Lion's direction ``sign((1 - b1) g + b1 m)`` and momentum ``m <- (1 - b2) g + b2 m``
    (optax's ``scale_by_lion``, ``mode='hard'``; C4.1). ``b1``, ``b2``: any real number, as
    optax (checked at construction: a non-number raises, a surely-wrong one warns)."""
    accept_number("b1", b1, _interpolation_problem)
    accept_number("b2", b2, _interpolation_problem)
    mu_dtype = storage_dtype("mu_dtype", mu_dtype)

    def init_fn(params):
        require_inexact("params", params)
        mu = jax.tree.map(lambda p: jnp.zeros_like(p, dtype=mu_dtype), params)
        return ScaleByLionState(count=jnp.zeros([], jnp.int32), mu=mu)

    def update_fn(updates, state, params=None):
        del params
        require_inexact("updates", updates)
        direction = jax.tree.map(lambda g, m: jnp.sign((1.0 - b1) * g + b1 * m), updates, state.mu)
        mu = jax.tree.map(lambda g, m: (1 - b2) * g + b2 * m, updates, state.mu)
        if mu_dtype is not None:
            mu = jax.tree.map(lambda m: m.astype(mu_dtype), mu)
        return direction, ScaleByLionState(count=safe_increment(state.count), mu=mu)

    return optax.GradientTransformation(init_fn, update_fn)


def lion(
    learning_rate: Any,
    b1: Any = 0.9,
    b2: Any = 0.99,
    mu_dtype: Any = None,
    weight_decay: Any = 1e-3,
    mask: Any | Callable[[Any], Any] | None = None,
) -> optax.GradientTransformation:
    """``scale_by_lion -> add_decayed_weights(weight_decay, mask) -> -learning_rate``
    (``optax.lion``; C4.1): ``p <- p - lr (sign((1 - b1) g + b1 m) + wd p)``, the ``wd p`` term
    only on the leaves ``mask`` selects (a pytree of flags or a callable ``updates -> flags``, as
    ``optax.lion``'s; None: every leaf). Every argument is checked by the part that takes it, here
    at construction, before any update."""
    return optax.chain(
        scale_by_lion(b1, b2, mu_dtype),
        add_decayed_weights(weight_decay, mask),
        scale_by_learning_rate(learning_rate),
    )
