"""Dynamic loss scaling for float16 training (C4.2).

Micikevicius et al., "Mixed Precision Training", 2018. The loss is multiplied by ``S`` before
differentiation so small float16 gradients do not flush to zero; gradients are divided by ``S`` in
float32. A step with a non-finite gradient is skipped and ``S`` halves; after ``growth_interval``
consecutive finite steps ``S`` doubles.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from jaxparadigm.common.numbers import check_int
from jaxparadigm.optim.counters import safe_increment
from jaxparadigm.optim.hyperparam_checks import check_number

# Largest power of two below float32's max: doubling stops here instead of reaching inf
# (an infinite scale would make every later step non-finite and could never recover).
MAX_SCALE = 2.0**127
MIN_SCALE = 1.0


class LossScaleState(NamedTuple):
    """``scale``: float32 scalar ``S``; ``good_steps``: int32 count of consecutive finite steps."""

    scale: jax.Array
    good_steps: jax.Array


class DynamicLossScale(NamedTuple):
    """Pure functions of a dynamic loss scale (C4.2); every one is jit-compatible.

    ``init() -> LossScaleState``; ``scale(loss, state) -> loss * S`` (float32 or wider);
    ``unscale(grads, state) -> (grads / S in float32, all_finite)``;
    ``update(state, finite) -> LossScaleState``.
    """

    init: Callable[[], LossScaleState]
    scale: Callable[[Any, LossScaleState], Any]
    unscale: Callable[[Any, LossScaleState], tuple[Any, jax.Array]]
    update: Callable[[LossScaleState, Any], LossScaleState]


def all_finite(tree: Any) -> jax.Array:
    """Bool scalar: every entry of every leaf is finite (True for an empty tree)."""
    leaves = jax.tree.leaves(tree)
    if not leaves:
        return jnp.array(True)
    return jnp.stack([jnp.all(jnp.isfinite(x)) for x in leaves]).all()


def dynamic_loss_scale(
    init_scale: float = 2.0**15, growth_interval: int = 2000
) -> DynamicLossScale:
    """Dynamic loss-scale state machine (C4.2).

    Non-finite step: ``S <- max(S / 2, 1)``, ``good_steps <- 0`` (the caller skips the update).
    Finite step: ``good_steps += 1``; when it reaches ``growth_interval``:
    ``S <- min(2 S, 2**127)``, ``good_steps <- 0``.

    ``init_scale`` must lie in ``[1, 2**127]`` and ``growth_interval`` be an integer ``>= 1``
    (``ValueError``/``TypeError`` otherwise). Not an optax port (optax has no loss scale): the
    bounds are the state machine's own clamps, so a scale outside them would jump to the clamp
    at the first update, and an interval below 1 would double the scale at every finite step.
    """
    check_number("init_scale", init_scale, low=MIN_SCALE, high=MAX_SCALE)
    check_int("growth_interval", growth_interval, 1, error=ValueError, type_error=TypeError)

    def init() -> LossScaleState:
        return LossScaleState(
            scale=jnp.asarray(init_scale, jnp.float32), good_steps=jnp.zeros([], jnp.int32)
        )

    def scale(loss, state: LossScaleState):
        # float16 * float32 promotes to float32, so S itself never overflows float16's range.
        return jnp.asarray(loss) * state.scale

    def unscale(grads, state: LossScaleState):
        unscaled = jax.tree.map(lambda g: g.astype(jnp.float32) / state.scale, grads)
        return unscaled, all_finite(grads)

    def update(state: LossScaleState, finite) -> LossScaleState:
        finite = jnp.asarray(finite, jnp.bool_)
        good = safe_increment(state.good_steps)
        grow = good >= growth_interval
        grown = jnp.where(grow, jnp.minimum(state.scale * 2.0, MAX_SCALE), state.scale)
        good = jnp.where(grow, 0, good)
        shrunk = jnp.maximum(state.scale * 0.5, MIN_SCALE)
        return LossScaleState(
            scale=jnp.where(finite, grown, shrunk).astype(jnp.float32),
            good_steps=jnp.where(finite, good, 0).astype(jnp.int32),
        )

    return DynamicLossScale(init=init, scale=scale, unscale=unscale, update=update)
