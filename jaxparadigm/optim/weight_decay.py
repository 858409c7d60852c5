"""Weight decay as an update transformation: ``u <- u + wd * p`` (C4.1, C4.2)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import optax

from jaxparadigm.optim.hyperparams import check_number
from jaxparadigm.optim.param_dtypes import coefficient


def decay_weights(updates: Any, params: Any, weight_decay: Any, mask: Any = None) -> Any:
    """``u <- u + wd * p`` on the leaves ``mask`` selects (all when None); None updates stay None.

    ``weight_decay`` is a Python number (static, folded as optax folds it) or a float32 array
    (a live hyper-parameter); ``mask`` a pytree of bools or a callable ``params -> pytree``.
    """
    if params is None:
        raise ValueError("add_decayed_weights: params=None, expected the current parameters")
    decay = lambda g, p: g + coefficient(weight_decay, p.dtype) * p
    is_none = lambda x: x is None
    if mask is None:
        return jax.tree.map(
            lambda g, p: None if g is None else decay(g, p), updates, params, is_leaf=is_none
        )
    flags = mask(params) if callable(mask) else mask
    return jax.tree.map(
        lambda g, p, m: g if (g is None or not m) else decay(g, p),
        updates,
        params,
        flags,
        is_leaf=is_none,
    )


def add_decayed_weights(
    weight_decay: float = 0.0,
    mask: Any | Callable[[Any], Any] | None = None,
) -> optax.GradientTransformation:
    """Add ``weight_decay * params`` to the updates (decoupled decay when placed before the lr).

    Formula: ``u <- u + wd * p`` for every leaf whose ``mask`` entry is true (all leaves when
    ``mask`` is None). ``mask`` is a pytree of bools shaped like the params, or a callable
    ``params -> such a pytree``. Leaves whose update is None (no gradient) stay None.
    """
    wd = check_number("weight_decay", weight_decay, low=0.0)
    if mask is not None and not callable(mask):
        mask_leaves = jax.tree.leaves(mask)
        if not all(isinstance(m, bool) for m in mask_leaves):
            raise TypeError(f"mask={mask!r}: expected a pytree of Python bools or a callable")

    def update_fn(updates, state, params=None):
        if wd == 0.0:
            if params is None:
                raise ValueError(
                    "add_decayed_weights: params=None, expected the current parameters"
                )
            return updates, state
        return decay_weights(updates, params, weight_decay, mask), state

    return optax.GradientTransformation(lambda params: optax.EmptyState(), update_fn)
