"""Weight decay as an update transformation: ``u <- u + wd * p`` (C4.1, C4.2)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxparadigm.optim.counters import safe_increment
from jaxparadigm.optim.hyperparam_checks import check_weight_decay, is_host_zero, warn_value
from jaxparadigm.optim.param_dtypes import coefficient


class WeightDecayScheduleState(NamedTuple):
    """Step counter of a scheduled weight decay (int32, saturating; ``optax``'s
    ``WeightDecaySchedule``)."""

    count: jax.Array  # type: ignore[assignment]  # field shadows tuple.count, as in optax states


@dataclasses.dataclass(frozen=True)
class LiveDecay:
    """A live weight decay (``inject_hyperparams``' float32 scalar): cast to each leaf's dtype
    (so it neither promotes a bfloat16 update nor differs from the static float in float32), and
    a live 0 leaves ``u`` untouched, as the static transformation skips a zero decay (``u + 0 * p``
    is NaN where ``p`` is not finite: the generated chains found the live AdamW's updates NaN
    where the static one's were not)."""

    value: Any


def _decay_leaves(updates: Any, params: Any, weight_decay: Any) -> Any:
    """``u + wd * p`` leaf by leaf; a None update stays None. ``wd`` as optax uses it (a number,
    an array, a schedule's value: no cast, no skip), or a :class:`LiveDecay`."""
    if isinstance(weight_decay, LiveDecay):
        live = weight_decay.value
        decay = lambda g, p: jnp.where(live == 0, g, g + coefficient(live, p.dtype) * p)
    else:
        decay = lambda g, p: g + weight_decay * p
    return jax.tree.map(
        lambda g, p: None if g is None else decay(g, p),
        updates,
        params,
        is_leaf=lambda x: x is None,
    )


def decay_weights(updates: Any, params: Any, weight_decay: Any, mask: Any = None) -> Any:
    """``u <- u + wd * p`` on the leaves ``mask`` selects (all when None); None updates stay None.

    ``weight_decay`` is a Python number (static, folded as optax folds it), an array or a schedule's
    value (used as optax uses them), or a :class:`LiveDecay`. ``mask`` is, as in ``optax.masked``, a
    pytree of flags whose structure is a prefix of the updates' (a flag selects its whole subtree,
    read by its truth value), or a callable ``updates -> such a pytree``.
    """
    if params is None:
        raise ValueError("add_decayed_weights: params=None, expected the current parameters")
    if mask is None:
        return _decay_leaves(updates, params, weight_decay)
    flags = mask(updates) if callable(mask) else mask
    return jax.tree.map(
        lambda m, g, p: _decay_leaves(g, p, weight_decay) if m else g, flags, updates, params
    )


def _check_mask(mask: Any) -> None:
    """A mask's leaves are flags: bools (NumPy/JAX ones included) or 0/1; any other leaf is read
    by its truth value, as optax reads it, with a ``UserWarning`` (``"false"`` is true)."""
    for leaf in jax.tree.leaves(mask):
        if isinstance(leaf, (bool, np.bool_)):
            continue
        if isinstance(leaf, (np.ndarray, jax.Array)) and np.ndim(leaf) == 0:
            if jnp.issubdtype(leaf.dtype, jnp.bool_) or jnp.issubdtype(leaf.dtype, jnp.integer):
                continue
        if isinstance(leaf, (int, np.integer)) and leaf in (0, 1):
            continue
        warn_value("mask", mask, f"its leaf {leaf!r} is not a bool and is read as {bool(leaf)}")
        return


def add_decayed_weights(
    weight_decay: Any = 0.0,
    mask: Any | Callable[[Any], Any] | None = None,
) -> optax.GradientTransformation:
    """Add ``weight_decay * params`` to the updates (decoupled decay when placed before the lr).

    Formula: ``u <- u + wd * p`` for every leaf whose ``mask`` entry is true (all leaves when
    ``mask`` is None); ``mask`` as in :func:`decay_weights`. As ``optax.add_decayed_weights``:
    ``weight_decay`` is any real number (negative: a ``UserWarning``) or a schedule
    ``count -> wd`` read at the pre-increment count (state: :class:`WeightDecayScheduleState`).
    Leaves whose update is None (no gradient) stay None; ``params=None`` raises ``ValueError``.
    """
    check_weight_decay("weight_decay", weight_decay)
    if mask is not None and not callable(mask):
        _check_mask(mask)
    scheduled = callable(weight_decay)

    def init_fn(params):
        del params
        if scheduled:
            return WeightDecayScheduleState(count=jnp.zeros([], jnp.int32))
        return optax.EmptyState()

    def update_fn(updates, state, params=None):
        if params is None:
            raise ValueError("add_decayed_weights: params=None, expected the current parameters")
        if scheduled:
            value = weight_decay(state.count)
            state = WeightDecayScheduleState(count=safe_increment(state.count))
            return decay_weights(updates, params, value, mask), state
        if is_host_zero(weight_decay):
            return updates, state
        return decay_weights(updates, params, weight_decay, mask), state

    return optax.GradientTransformation(init_fn, update_fn)
