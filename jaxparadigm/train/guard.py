"""The non-finite guard: skip bad steps, roll back after K in a row (C5.1: "roll back in seconds").

In the jitted step (pure functions, a NamedTuple state like an optax transformation):

    finite_t   = isfinite(loss_t) and all(isfinite(g) for g in grads_t)
    state_{t+1} = update_t(state_t)  if finite_t  else state_t          (skip; counted)
    bad_streak  = 0 if finite_t else bad_streak + 1

Outside jit the loop asks :func:`should_rollback` (``bad_streak >= max_bad_steps``); it then
restores the last good checkpoint and multiplies the learning-rate scale by ``lr_decay_on_rollback``
(:func:`rollback_lr_scale`). Every skip and rollback is logged as a :class:`GuardEvent`.

Give-up rule (:func:`give_up_reason`): a rollback that would be number ``max_rollbacks + 1``, or
would take the scale below ``min_lr_scale > 0``, ends the run instead; so the scale never reaches 0
and a run that cannot train does not report success.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import chex
import jax
import jax.numpy as jnp
import numpy as np

from jaxparadigm.common.numbers import check_float, check_int

__all__ = [
    "GuardEvent",
    "GuardState",
    "all_finite",
    "guard_init",
    "give_up_reason",
    "guard_update",
    "rollback_lr_scale",
    "should_rollback",
    "tree_select",
]


class GuardState(NamedTuple):
    """``bad_streak`` (consecutive skipped steps), ``skipped`` and ``rollbacks`` totals (int32)."""

    bad_streak: jax.Array
    skipped: jax.Array
    rollbacks: jax.Array


class GuardEvent(NamedTuple):
    """One logged action: ``kind`` in {"skip", "overflow", "rollback"}, the data step, a message.

    ``"overflow"`` is a float16 loss-scale overflow: skipped by the loss scaler, not a bad step.
    """

    kind: str
    step: int
    message: str


def guard_init() -> GuardState:
    """All counters zero (C5.1)."""
    return GuardState(*(jnp.zeros((), jnp.int32) for _ in range(3)))


def all_finite(*trees: Any) -> jax.Array:
    """Bool scalar: every element of every leaf of ``trees`` is finite (C5.1)."""
    leaves = [x for t in trees for x in jax.tree_util.tree_leaves(t)]
    if not leaves:
        return jnp.array(True)
    return jnp.all(jnp.stack([jnp.all(jnp.isfinite(x)) for x in leaves]))


def guard_update(state: GuardState, finite: jax.Array) -> GuardState:
    """``bad_streak <- 0 if finite else bad_streak + 1``; ``skipped += not finite`` (C5.1)."""
    chex.assert_shape(finite, ())
    bad = jnp.logical_not(finite).astype(jnp.int32)
    return GuardState(
        bad_streak=jnp.where(finite, 0, state.bad_streak + 1).astype(jnp.int32),
        skipped=state.skipped + bad,
        rollbacks=state.rollbacks,
    )


def tree_select(pred: jax.Array, on_true: Any, on_false: Any) -> Any:
    """Leafwise ``where(pred, on_true, on_false)``: the skip is a select, not a branch (C5.1)."""
    return jax.tree_util.tree_map(lambda a, b: jnp.where(pred, a, b), on_true, on_false)


def should_rollback(state: GuardState, max_bad_steps: int) -> bool:
    """Host-side: ``bad_streak >= max_bad_steps`` (C5.1)."""
    max_bad_steps = check_int("max_bad_steps", max_bad_steps, 1, error=ValueError)
    return int(state.bad_streak) >= max_bad_steps


def rollback_lr_scale(lr_scale: float, factor: float) -> float:
    """Learning-rate scale after a rollback: ``float32(lr_scale * factor)``, ``0 < factor <= 1``.

    Rounded to float32 (the state's dtype), so :func:`give_up_reason` sees the value the step
    would use (an underflow shows as 0.0).
    """
    factor = check_float(
        "lr_decay_on_rollback", factor, 0, 1, lo_open=True, error=ValueError, expected="a value"
    )
    return float(np.float32(np.float32(lr_scale) * np.float32(factor)))


def give_up_reason(
    rollbacks: int, new_lr_scale: float, max_rollbacks: int, min_lr_scale: float
) -> str | None:
    """Host-side give-up rule (C5.1): why another rollback must not happen, or None.

    Gives up when ``rollbacks >= max_rollbacks`` (this would be one more) or when the lowered
    scale ``new_lr_scale < min_lr_scale`` (also when it is 0 or NaN). ``min_lr_scale > 0``.
    """
    if not min_lr_scale > 0.0:
        raise ValueError(f"min_lr_scale: got {min_lr_scale!r}, expected a value > 0")
    if rollbacks >= max_rollbacks:
        return (
            f"a rollback was needed after {rollbacks} rollback(s) "
            f"(train.guard.max_rollbacks={max_rollbacks})"
        )
    if not new_lr_scale >= min_lr_scale:
        return (
            f"a rollback would lower the lr scale to {new_lr_scale:g}, below "
            f"train.guard.min_lr_scale={min_lr_scale:g}"
        )
    return None
