"""The guard's host side: roll back to the last good state, or give up (C5.1).

After ``guard.max_bad_steps`` non-finite steps in a row the loop calls :func:`rollback_or_give_up`::

    s' = lr_decay_on_rollback * s                       (float32; guard.rollback_lr_scale)
    give up  if rollbacks >= max_rollbacks or s' < min_lr_scale      (guard.give_up_reason)
    else     state <- last good state (newest checkpoint, else the in-memory snapshot) with the
             current data step, RNG and loss scale, lr scale s', bad streak 0, rollbacks + 1

Giving up raises :class:`~jaxparadigm.errors.TrainingAborted` with the step, the counts and the
last finite loss; nothing is saved of the state that no longer trains.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxparadigm.errors import TrainingAborted
from jaxparadigm.train.guard import GuardState, give_up_reason, rollback_lr_scale
from jaxparadigm.train.sharding import place, release, shapes_of, to_host
from jaxparadigm.train.train_step import TrainState

if TYPE_CHECKING:
    from jaxparadigm.train.checkpoint import Checkpointer
    from jaxparadigm.train.settings import GuardSettings

__all__ = ["rollback", "rollback_or_give_up"]


def rollback(
    state: TrainState, ckpt: Checkpointer | None, snapshot: Any, new_scale: float
) -> tuple[TrainState, str]:
    """Restore the last good state; keep data position, RNG and loss scale; set the lr scale.

    The source is the newest checkpoint of ``ckpt`` when there is one, else ``snapshot`` (a host
    copy of a good state). The bad state's parameters and optimiser state are freed first and
    the good ones read into their layout (``sharding.shapes_of``), so a device never holds both.
    Returns the state and a message saying what was done (C5.1).
    """
    template = shapes_of(state)
    from_checkpoint = ckpt is not None and ckpt.latest_step() is not None
    host = None if from_checkpoint else to_host(snapshot)  # (a device snapshot may share buffers)
    release((state.params, state.opt_state))  # dropped by the rollback in any case
    if ckpt is not None and from_checkpoint:
        good = ckpt.restore(template)
        source = f"checkpoint step {int(good.step)}"
    else:
        good = place(host, jax.tree_util.tree_map(lambda t: t.sharding, template))
        source = f"in-memory snapshot of step {int(good.step)}"
    g = state.guard
    restored = good._replace(
        step=state.step,
        rng=state.rng,
        loss_scale=state.loss_scale,
        lr_scale=place(np.float32(new_scale), state.lr_scale.sharding),
        guard=GuardState(
            bad_streak=jnp.zeros_like(g.bad_streak), skipped=g.skipped, rollbacks=g.rollbacks + 1
        ),
    )
    msg = (
        f"{int(g.bad_streak)} consecutive bad steps at step {int(state.step) - 1}: rolled back to "
        f"{source}, lr scale {float(state.lr_scale):g} -> {new_scale:g}"
    )
    return restored, msg


def rollback_or_give_up(
    state: TrainState,
    guard_cfg: GuardSettings,
    ckpt: Checkpointer | None,
    snapshot: Any,
    *,
    step: int,
    steps: int,
    last_finite: tuple[int, float] | None,
) -> tuple[TrainState, str]:
    """:func:`rollback` with the lowered scale, or raise :class:`TrainingAborted` (C5.1).

    ``step`` is the data step just run, ``steps`` the run's length, ``last_finite`` the
    ``(step, loss)`` of the last finite loss seen (or None); they go into the abort message.
    """
    g = guard_cfg
    new_scale = rollback_lr_scale(float(state.lr_scale), g.lr_decay_on_rollback)
    reason = give_up_reason(int(state.guard.rollbacks), new_scale, g.max_rollbacks, g.min_lr_scale)
    if reason is None:
        return rollback(state, ckpt, snapshot, new_scale)
    last = (
        f"last finite loss {last_finite[1]:.6g} at step {last_finite[0]}"
        if last_finite
        else "no finite loss in this call"
    )
    latest = ckpt.latest_step() if ckpt is not None else None
    raise TrainingAborted(
        f"training aborted at step {step} of {steps}: {reason}; "
        f"{int(state.guard.skipped)} step(s) skipped, {int(state.guard.rollbacks)} rollback(s), "
        f"{int(state.opt_steps)} accepted update(s) in the state, lr scale "
        f"{float(state.lr_scale):g}; {last}. "
        "No checkpoint of this state was saved"
        + (f" (newest checkpoint: step {latest})" if latest is not None else "")
    )
