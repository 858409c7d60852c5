"""One training run's per-step stages: faults, step, events, guard, log, eval, checkpoint (C5.1).

:mod:`jaxparadigm.train.train_loop` builds a :class:`Run` (what never changes during the run:
settings, data, jitted steps, checkpointer, event log, last step) and a :class:`LoopState` (what
each step changes: the train state, the rollback snapshot, losses, health) whole, then calls
:func:`one_step` per data step and, at the end, :func:`final_checkpoint`. The semantics of each
stage are in the loop's module docstring.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import jax
import numpy as np

from jaxparadigm.errors import TrainingAborted
from jaxparadigm.train.checkpoint import Checkpointer
from jaxparadigm.train.data import Dataset
from jaxparadigm.train.faults import poison_batch
from jaxparadigm.train.guard import GuardEvent, should_rollback
from jaxparadigm.train.metrics import MetricsWriter, StepClock
from jaxparadigm.train.rollback import rollback_or_give_up
from jaxparadigm.train.settings import TrainSettings
from jaxparadigm.train.sharding import to_host
from jaxparadigm.train.train_step import TrainState

__all__ = ["EventLog", "LoopState", "Run", "Steps", "evaluate", "final_checkpoint", "one_step"]


class EventLog:
    """Guard events, kept in order and written to metrics.jsonl as they happen."""

    def __init__(self, writer: MetricsWriter) -> None:
        self.writer = writer
        self.events: list[GuardEvent] = []

    def event(self, kind: str, step: int, message: str) -> None:
        """Record ``GuardEvent(kind, step, message)`` and write it as a metrics record."""
        self.events.append(GuardEvent(kind, step, message))
        self.writer.write({"step": step, "event": kind, "message": message})


class Steps(NamedTuple):
    """The jitted train and eval steps and the batch placement they expect."""

    train: Callable
    eval: Callable
    place: Callable


class Run(NamedTuple):
    """What one call of ``train`` fixes before its first step."""

    settings: TrainSettings
    dataset: Dataset
    steps: Steps
    ckpt: Checkpointer | None
    log: EventLog
    batch_transform: Callable | None
    end: int  # the data step this call stops at


@dataclasses.dataclass
class LoopState:
    """What the steps change: the train state and what the guard and the logs need of the past."""

    state: TrainState
    snapshot: Any  # host copy of the last good state (rollback target without checkpoints)
    losses: list = dataclasses.field(default_factory=list)
    last_finite: tuple[int, float] | None = None  # (data step, loss) of the last finite loss
    healthy: bool = False  # the state after the last step may be saved
    clock: StepClock = dataclasses.field(default_factory=StepClock)
    postfix: dict = dataclasses.field(default_factory=dict)  # latest logged figures (progress)


def evaluate(
    eval_fn: Callable[..., Any], params: Any, batches: Sequence[Any], place: Callable[[Any], Any]
) -> dict:
    """Mean of ``eval_fn(params, batch)`` over ``batches`` (each placed by ``place``)."""
    sums: dict[str, float] = {}
    for b in batches:
        for k, v in jax.device_get(eval_fn(params, place(b))).items():
            sums[k] = sums.get(k, 0.0) + float(v)
    return {k: v / len(batches) for k, v in sums.items()}


def one_step(run: Run, loop: LoopState, step: int) -> None:
    """Data step ``step``: run it, observe it (guard), log, eval, checkpoint."""
    m = _run_step(run, loop, step)
    rolled_back = _observe(run, loop, step, m)
    loop.healthy = _healthy(loop, m, rolled_back)
    _log(run, loop, step + 1, m)
    _evaluate_and_snapshot(run, loop, step + 1)
    _checkpoint(run, loop, step + 1)


def _batch(run: Run, step: int) -> dict:
    """The step's batch: transformed, then poisoned when a batch fault is planned."""
    batch = run.dataset.batch(step)
    if run.batch_transform is not None:
        batch = run.batch_transform(step, batch)
    faults = run.settings.faults
    if step in faults.batch:
        value = faults.batch[step]
        run.log.event("fault", step, f"fault injection: {value} in the batch of step {step}")
        batch = poison_batch(batch, value)
    return batch


def _run_step(run: Run, loop: LoopState, step: int) -> dict:
    """Planned faults, the step's batch, and one jitted step; returns its metrics on the host."""
    faults = run.settings.faults
    if faults.kill_at == step:
        run.log.event("fault", step, f"fault injection: SIGKILL before step {step}")
        faults.kill()
    args: tuple[Any, ...] = (loop.state, run.steps.place(_batch(run, step)))
    grad_fault = faults.grad_fault(step)
    if grad_fault is not None:
        args += (grad_fault,)
        if not np.isfinite(grad_fault):
            run.log.event("fault", step, f"fault injection: {grad_fault} gradients at step {step}")

    def call():
        loop.state, metrics = run.steps.train(*args)
        return jax.device_get(metrics)

    return loop.clock.timed(call)


def _observe(run: Run, loop: LoopState, step: int, m: dict) -> bool:
    """Log what the step did (overflow / skip / applied); roll back if due. True if rolled back."""
    loss = float(m["loss"])
    loop.losses.append(loss)
    if math.isfinite(loss):
        loop.last_finite = (step, loss)
    if bool(m["overflow"]):
        run.log.event(
            "overflow",
            step,
            f"loss-scale overflow at step {step} (scale {float(m['loss_scale']):g}): update "
            "skipped, scale halved",
        )
    elif not bool(m["finite"]) and bool(m["accepted"]):
        run.log.event(
            "applied",
            step,
            f"non-finite loss/gradients at step {step}: update APPLIED (guard disabled); the "
            "parameters may now be non-finite",
        )
    elif not bool(m["finite"]):
        run.log.event("skip", step, f"non-finite loss/gradients at step {step}: update skipped")
    g = run.settings.guard
    if g.enabled and should_rollback(loop.state.guard, g.max_bad_steps):
        _guard(run, loop, step)
        return True
    return False


def _guard(run: Run, loop: LoopState, step: int) -> None:
    """Roll back with a lower lr scale, or give up (TrainingAborted, logged as an abort event)."""
    try:
        loop.state, msg = rollback_or_give_up(
            loop.state,
            run.settings.guard,
            run.ckpt,
            loop.snapshot,
            step=step,
            steps=run.settings.steps,
            last_finite=loop.last_finite,
        )
    except TrainingAborted as err:
        run.log.event("abort", step, str(err))
        raise
    run.log.event("rollback", step, msg)


def _log(run: Run, loop: LoopState, done: int, m: dict) -> None:
    """The progress figures of step ``done`` (every step: a progress line names the step whose
    loss it shows); a train record every ``log_every`` steps and at the end."""
    loop.postfix = {"loss": f"{float(m['loss']):.4f}", "lr": f"{float(m['lr']):.2e}"}
    if done % run.settings.log_every and done != run.end:
        return
    sps = loop.clock.steps_per_second()
    rec = {k: m[k] for k in ("loss", "lr", "grad_norm", "loss_scale") if k in m}
    rec.update(step=done, steps_per_s=sps, examples_per_s=sps * run.settings.batch_size)
    run.log.writer.write(rec)


def _evaluate_and_snapshot(run: Run, loop: LoopState, done: int) -> None:
    """Eval every ``eval_every`` steps (not at the end); refresh the in-memory rollback target."""
    if done % run.settings.eval_every or done == run.end:
        return
    ev = evaluate(run.steps.eval, loop.state.params, run.dataset.val_batches, run.steps.place)
    run.log.writer.write({"step": done, **{f"eval_{k}": v for k, v in ev.items()}})
    if run.ckpt is None and int(loop.state.guard.bad_streak) == 0:
        loop.snapshot = to_host(loop.state)


def _healthy(loop: LoopState, m: dict, rolled_back: bool) -> bool:
    """Whether the state may be saved: last step finite (or a loss-scale overflow), no bad streak,
    not just rolled back."""
    ok = bool(m["finite"]) or bool(m["overflow"])
    return ok and not rolled_back and int(loop.state.guard.bad_streak) == 0


def _checkpoint(run: Run, loop: LoopState, done: int, final: bool = False) -> None:
    """Save every ``checkpoint.every`` steps (and the ``final`` one), only a healthy state; a
    skipped save is logged."""
    if run.ckpt is None or (done % run.settings.checkpoint.every and not final):
        return
    if loop.healthy:
        run.ckpt.save(loop.state)
    else:
        run.log.event(
            "checkpoint_skipped",
            done - 1,
            f"checkpoint due after step {done - 1} not saved: the state is not healthy (a "
            "non-finite step, a bad streak or a rollback just happened)",
        )


def final_checkpoint(run: Run, loop: LoopState) -> None:
    """The checkpoint after the run's last step (of a healthy state; else a logged skip)."""
    _checkpoint(run, loop, run.end, final=True)
