"""The train loop: data checks, jitted step, guard + rollback, eval, checkpoints, metrics, plots (C5.1).

``train(cfg)`` runs ``cfg.train.steps`` steps of the jitted step (:mod:`jaxparadigm.train.step`) and
writes ``<out_dir>/<name>/metrics.jsonl`` and PNG plots. It is a sequence of named stages:

1. ``_setup``: check the first train batch and every validation batch against the dataset's
   schema (``validate_batch``), build the model, optimiser, train state, placement and step;
2. ``_resume``: with checkpoints on, continue from the newest complete checkpoint in the run
   directory (unless ``checkpoint.resume`` is false, which deletes them), truncating
   ``metrics.jsonl`` to the resumed step;
3. per step, ``_run_step`` (faults, batch, jitted step), ``_observe`` (events), ``_guard``
   (rollback or give up), ``_log``, ``_evaluate_and_snapshot``, ``_checkpoint``;
4. ``_finish``: final evaluation and save, plots.

A non-finite step is skipped by the step itself; after ``guard.max_bad_steps`` in a row the loop
restores the last good state (the newest checkpoint when checkpoints are on, otherwise an in-memory
snapshot taken every ``eval_every`` steps), multiplies the learning-rate scale by
``guard.lr_decay_on_rollback`` and carries on with the *next* batch (data and RNG keep advancing).
When the guard's give-up rule fires (``guard.max_rollbacks``, ``guard.min_lr_scale``) the run
stops with :class:`~jaxparadigm.errors.TrainingAborted`; no checkpoint of that state is saved.
A checkpoint is only saved of a healthy state (last step finite or a loss-scale overflow, no bad
streak, not just rolled back); a due save that is skipped is logged. A float16 loss-scale overflow
(logged as an ``"overflow"`` event) is skipped and halves the scale but is not a guard bad step,
and a rollback keeps the *current* loss-scale state. Events say what happened: with the guard off
a non-finite step is logged as ``"applied"``, not as skipped.
"""

from __future__ import annotations

import dataclasses
import math
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import jax
import numpy as np
from flax import nnx

from jaxparadigm.errors import ConfigError, TrainingAborted
from jaxparadigm.models.mlp import MLP
from jaxparadigm.models.transformer import TransformerLM
from jaxparadigm.optim import chain_for, dynamic_loss_scale, schedule_for
from jaxparadigm.train.checkpoint import Checkpointer, CheckpointSignatureError
from jaxparadigm.train.data import Dataset, build_dataset, validate_batch
from jaxparadigm.train.distributed import initialize_distributed, on_primary, process_shard
from jaxparadigm.train.faults import FaultPlan, fault_plan, poison_batch
from jaxparadigm.train.guard import GuardEvent, should_rollback
from jaxparadigm.train.metrics import MetricsWriter, StepClock, read_metrics
from jaxparadigm.train.objectives import eval_metrics, loss_for
from jaxparadigm.train.plots import plot_training
from jaxparadigm.train.progress import StepProgress
from jaxparadigm.train.rollback import rollback_or_give_up
from jaxparadigm.train.sharding import (
    data_mesh,
    layout_figures,
    place,
    shard_batch,
    step_layout,
    to_host,
)
from jaxparadigm.train.step import TrainState, init_train_state, make_eval_step, make_train_step

__all__ = ["TrainResult", "build_model", "dataset_for", "run_dir_for", "train"]


class TrainResult(NamedTuple):
    """What a run leaves behind: final state, per-step losses, records, guard events, files."""

    state: TrainState
    losses: list  # float loss of every step run in this call (NaN where skipped)
    records: list  # metrics records (also in metrics.jsonl)
    events: list  # GuardEvent per skip / rollback / overflow / fault / ...
    final_eval: dict
    run_dir: Path
    plots: list
    steps_per_second: float
    examples_per_second: float
    resumed_from: int | None
    step_latency_ms: dict  # {"p50": ..., "p99": ...} of host-observed step times (after compile)
    placement: dict | None  # sharding.layout_figures of a sharded run (None for mode 'none')


def run_dir_for(cfg) -> Path:
    """``<cfg.out_dir>/<cfg.name>``."""
    return Path(cfg.out_dir) / cfg.name


def dataset_for(cfg) -> Dataset:
    """This process's :class:`Dataset` of ``cfg.data`` (its rows of every global batch) (C5.2).

    A ``data.batch_size`` that the devices of a sharded run cannot split evenly is a
    :class:`ConfigError`. Call after :func:`initialize_distributed`.
    """
    if cfg.train.sharding.mode != "none" and cfg.data.batch_size % jax.device_count():
        raise ConfigError(
            f"data.batch_size: got {cfg.data.batch_size}, expected a multiple of the "
            f"{jax.device_count()} devices for train.sharding.mode={cfg.train.sharding.mode!r}"
        )
    return build_dataset(cfg.data, shard=process_shard())


def build_model(model_cfg, dataset: Dataset, seed: int) -> nnx.Module:
    """The NNX model a ``ModelConfig`` describes, sized to ``dataset`` (C5.1).

    A model that does not fit the data raises :class:`ConfigError` naming the ``model.*`` key.
    """
    m = model_cfg
    rngs = nnx.Rngs(seed)
    if m.kind == "mlp":
        if dataset.kind == "pydoc_chars":
            raise ConfigError("model.kind: got 'mlp', expected 'transformer' for data pydoc_chars")
        if m.num_outputs != dataset.num_outputs:
            raise ConfigError(
                f"model.num_outputs: got {m.num_outputs}, expected {dataset.num_outputs} "
                f"for data kind {dataset.kind!r}"
            )
        return MLP(dataset.in_features, m.hidden, m.num_outputs, dtype=m.dtype, rngs=rngs)
    if dataset.kind != "pydoc_chars":
        raise ConfigError(
            f"model.kind: got 'transformer', expected 'mlp' for data {dataset.kind!r}"
        )
    if m.vocab_size < 256:
        raise ConfigError(f"model.vocab_size: got {m.vocab_size}, expected >= 256 (bytes)")
    if m.context < dataset.in_features:
        raise ConfigError(
            f"model.context: got {m.context}, expected >= data.seq_len={dataset.in_features}"
        )
    if m.d_model % m.num_heads:
        raise ConfigError(
            f"model.num_heads: got {m.num_heads}, expected a divisor of model.d_model={m.d_model}"
        )
    return TransformerLM(
        m.vocab_size,
        m.d_model,
        m.num_layers,
        m.num_heads,
        m.context,
        tie_embeddings=m.tie_embeddings,
        dropout=m.dropout,
        dtype=m.dtype,
        rngs=rngs,
    )


def _evaluate(eval_fn, params, batches, place) -> dict:
    sums: dict[str, float] = {}
    for b in batches:
        for k, v in jax.device_get(eval_fn(params, place(b))).items():
            sums[k] = sums.get(k, 0.0) + float(v)
    return {k: v / len(batches) for k, v in sums.items()}


@dataclasses.dataclass
class _Run:
    """One call of ``train``: what the stages share (fixed setup, then the evolving loop state)."""

    cfg: Any
    dataset: Dataset
    step_fn: Callable
    eval_fn: Callable
    place: Callable
    ckpt: Checkpointer | None
    faults: FaultPlan
    batch_transform: Callable | None
    state: TrainState
    placement: dict | None = None
    writer: MetricsWriter | None = None
    snapshot: Any = None
    end: int = 0
    events: list = dataclasses.field(default_factory=list)
    losses: list = dataclasses.field(default_factory=list)
    last_finite: tuple[int, float] | None = None  # (data step, loss)
    healthy: bool = False  # the state after the last step may be saved
    clock: StepClock = dataclasses.field(default_factory=StepClock)
    postfix: dict | None = None  # the latest logged figures, shown by the progress display

    def event(self, kind: str, step: int, message: str) -> None:
        self.events.append(GuardEvent(kind, step, message))
        self.writer.write({"step": step, "event": kind, "message": message})


def train(
    cfg,
    *,
    dataset: Dataset | None = None,
    tx=None,
    lr_fn: Callable | None = None,
    run_dir: str | Path | None = None,
    stop_at: int | None = None,
    batch_transform: Callable[[int, dict], dict] | None = None,
    progress: bool = True,
    write_plots: bool | None = None,
) -> TrainResult:
    """Train the model of ``cfg`` for ``cfg.train.steps`` steps (C5.1, C5.2).

    ``tx``/``lr_fn`` default to ``jaxparadigm.optim.chain_for(cfg.optim)`` /
    ``schedule_for(cfg.optim)``. ``stop_at`` ends the call early at that data step, like a crash
    (no final checkpoint); a later call resumes from the newest checkpoint.
    ``batch_transform(step, batch)`` is applied to each train batch after validation
    (augmentation, or fault injection in tests). Raises :class:`TrainingAborted` when the guard
    gives up, ``ConfigError``/``CheckpointError`` (input errors) for an unusable config or run
    directory.
    """
    if stop_at is not None and (
        isinstance(stop_at, bool) or not isinstance(stop_at, int) or stop_at < 0
    ):
        raise ValueError(f"stop_at: got {stop_at!r}, expected None or an int >= 0")
    if batch_transform is not None and not callable(batch_transform):
        raise TypeError(
            f"batch_transform: got {type(batch_transform).__name__}, expected a callable"
        )
    initialize_distributed(cfg.train.distributed)
    run_dir = Path(run_dir) if run_dir is not None else run_dir_for(cfg)
    run = _setup(cfg, dataset, tx, lr_fn, batch_transform, run_dir)
    bar = None
    try:
        resumed_from = _resume(run, run_dir)
        start = int(run.state.step)
        run.end = max(start, cfg.train.steps if stop_at is None else min(cfg.train.steps, stop_at))
        run.snapshot = to_host(run.state)  # rollback target when checkpoints are off
        bar = StepProgress(start, run.end, cfg.name, enabled=progress and jax.process_index() == 0)
        for step in range(start, run.end):
            m = _run_step(run, step)
            rolled_back = _observe(run, step, m)
            run.healthy = _healthy(run, m, rolled_back)
            _log(run, step + 1, m)
            _evaluate_and_snapshot(run, step + 1)
            _checkpoint(run, step + 1)
            bar.update(step + 1, run.postfix)
        final_eval = _finish(run, start, stop_at is None)
    finally:
        if bar is not None:
            bar.close()
        if run.ckpt is not None:
            run.ckpt.close()
    plots = []
    if (cfg.train.plots if write_plots is None else write_plots) and jax.process_index() == 0:
        plots = plot_training(read_metrics(run.writer.path), run_dir)
    sps = run.clock.steps_per_second()
    return TrainResult(
        state=run.state,
        losses=run.losses,
        records=run.writer.records,
        events=run.events,
        final_eval=final_eval,
        run_dir=run_dir,
        plots=plots,
        steps_per_second=sps,
        examples_per_second=sps * cfg.data.batch_size,
        resumed_from=resumed_from,
        step_latency_ms=run.clock.latency_ms(),
        placement=run.placement,
    )


def _setup(cfg, dataset, tx, lr_fn, batch_transform, run_dir: Path) -> _Run:
    """Data checks, model, optimiser, fresh state, placement, jitted steps, checkpointer."""
    c = cfg.train
    if c.sharding.mode == "none" and jax.process_count() > 1:
        raise ConfigError(
            f"train.sharding.mode: got 'none', expected data, zero1 or fsdp in a run of "
            f"{jax.process_count()} processes"
        )
    dataset = dataset if dataset is not None else dataset_for(cfg)
    if dataset.shard != process_shard():
        raise ValueError(
            f"dataset: got the rows of shard {dataset.shard}, expected this process's shard "
            f"{process_shard()} (build it with train.loop.dataset_for(cfg))"
        )
    validate_batch(dataset.batch(0), dataset.schema)
    for vb in dataset.val_batches:
        validate_batch(vb, dataset.schema)
    graphdef, variables = nnx.split(build_model(cfg.model, dataset, c.seed))
    tx = tx if tx is not None else chain_for(cfg.optim)
    ls = cfg.optim.loss_scale
    loss_scale = (
        dynamic_loss_scale(init_scale=ls.init_scale, growth_interval=ls.growth_interval)
        if ls.enabled
        else None
    )
    state = init_train_state(nnx.to_pure_dict(variables), tx, c.seed, loss_scale)
    state, place_batch, layout = _place(cfg, state)
    step_fn = make_train_step(
        graphdef,
        loss_for(dataset.kind),
        tx,
        lr_fn=lr_fn if lr_fn is not None else schedule_for(cfg.optim),
        loss_scale=loss_scale,
        guard=c.guard.enabled,
        grad=c.grad,
        layout=layout,
    )
    eval_fn = make_eval_step(graphdef, lambda m, b: eval_metrics(dataset.kind, m, b), layout)
    if c.checkpoint.every > 0 and not c.checkpoint.resume:
        on_primary(lambda: shutil.rmtree(run_dir / "checkpoints", ignore_errors=True), "fresh")
    ckpt = (
        Checkpointer(run_dir / "checkpoints", cfg, keep=c.checkpoint.keep)
        if c.checkpoint.every > 0
        else None
    )
    faults = fault_plan(c.faults)
    run = _Run(cfg, dataset, step_fn, eval_fn, place_batch, ckpt, faults, batch_transform, state)
    if layout is not None:
        args = (state, place_batch(dataset.batch(0)))
        fault = run.faults.grad_fault(0)
        hlo = step_fn.lower(*args, *(() if fault is None else (fault,))).compile().as_text()
        run.placement = layout_figures(layout, state, hlo)
    return run


def _place(cfg, state: TrainState):
    """``(state, place_batch, layout)``: the state on one device (mode ``none``, layout None) or
    laid out over all devices by ``train.sharding`` (C5.2)."""
    sh = cfg.train.sharding
    if sh.mode == "none":
        return jax.device_put(state), jax.device_put, None
    mesh = data_mesh()
    layout = step_layout(state, mesh, sh.mode, sh.min_size)
    return place(to_host(state), layout.state), lambda b: shard_batch(b, mesh), layout


def _resume(run: _Run, run_dir: Path) -> int | None:
    """Restore the newest complete checkpoint (if any); open metrics.jsonl truncated to it."""
    latest = run.ckpt.latest_step() if run.ckpt is not None else None
    if latest is not None and latest > run.cfg.train.steps:
        raise ConfigError(
            f"train.steps: got {run.cfg.train.steps}, but the newest checkpoint in "
            f"{run.ckpt.directory} is step {latest}; expected >= {latest} to resume this run "
            "(or another name to start a separate one)"
        )
    if latest is not None:
        try:
            run.state = run.ckpt.restore(run.state)
        except CheckpointSignatureError as err:
            raise CheckpointSignatureError(
                f"{err} The checkpoints are left untouched: to resume them, run with the "
                "checkpoint's values; to train this config instead, give the run another name "
                "(name=...)."
            ) from None
    run.writer = MetricsWriter(run_dir / "metrics.jsonl", resume_from=latest)
    skipped = run.ckpt.incomplete if run.ckpt is not None else {}
    if latest is not None or skipped:
        run.event(
            "resume",
            latest or 0,
            (f"resumed from checkpoint step {latest}" if latest else "started afresh")
            + "".join(f"; skipped incomplete step {k} ({v})" for k, v in sorted(skipped.items()))
            + "; records of later steps from the interrupted run were dropped",
        )
    return latest


def _run_step(run: _Run, step: int) -> dict:
    """Planned faults, the step's batch, and one jitted step; returns its metrics on the host."""
    if run.faults.kill_at == step:
        run.event("fault", step, f"fault injection: SIGKILL before step {step}")
        run.faults.kill()
    batch = run.dataset.batch(step)
    if run.batch_transform is not None:
        batch = run.batch_transform(step, batch)
    if step in run.faults.batch:
        value = run.faults.batch[step]
        run.event("fault", step, f"fault injection: {value} in the batch of step {step}")
        batch = poison_batch(batch, value)
    args = (run.state, run.place(batch))
    grad_fault = run.faults.grad_fault(step)
    if grad_fault is not None:
        args += (grad_fault,)
        if not np.isfinite(grad_fault):
            run.event("fault", step, f"fault injection: {grad_fault} gradients at step {step}")

    def call():
        run.state, metrics = run.step_fn(*args)
        return jax.device_get(metrics)

    return run.clock.timed(call)


def _observe(run: _Run, step: int, m: dict) -> bool:
    """Log what the step did (overflow / skip / applied); roll back if due. True if rolled back."""
    loss = float(m["loss"])
    run.losses.append(loss)
    if math.isfinite(loss):
        run.last_finite = (step, loss)
    if bool(m["overflow"]):
        run.event(
            "overflow",
            step,
            f"loss-scale overflow at step {step} (scale {float(m['loss_scale']):g}): update "
            "skipped, scale halved",
        )
    elif not bool(m["finite"]) and bool(m["accepted"]):
        run.event(
            "applied",
            step,
            f"non-finite loss/gradients at step {step}: update APPLIED (guard disabled); the "
            "parameters may now be non-finite",
        )
    elif not bool(m["finite"]):
        run.event("skip", step, f"non-finite loss/gradients at step {step}: update skipped")
    g = run.cfg.train.guard
    if g.enabled and should_rollback(run.state.guard, g.max_bad_steps):
        _guard(run, step)
        return True
    return False


def _guard(run: _Run, step: int) -> None:
    """Roll back with a lower lr scale, or give up (TrainingAborted, logged as an abort event)."""
    try:
        run.state, msg = rollback_or_give_up(
            run.state,
            run.cfg.train.guard,
            run.ckpt,
            run.snapshot,
            step=step,
            steps=run.cfg.train.steps,
            last_finite=run.last_finite,
        )
    except TrainingAborted as err:
        run.event("abort", step, str(err))
        raise
    run.event("rollback", step, msg)


def _log(run: _Run, done: int, m: dict) -> None:
    """A train record every ``log_every`` steps and at the end."""
    if done % run.cfg.train.log_every and done != run.end:
        return
    sps = run.clock.steps_per_second()
    rec = {k: m[k] for k in ("loss", "lr", "grad_norm", "loss_scale") if k in m}
    rec.update(step=done, steps_per_s=sps, examples_per_s=sps * run.cfg.data.batch_size)
    rec = run.writer.write(rec)
    run.postfix = {"loss": f"{rec['loss']:.4f}", "lr": f"{rec['lr']:.2e}"}


def _evaluate_and_snapshot(run: _Run, done: int) -> None:
    """Eval every ``eval_every`` steps (not at the end); refresh the in-memory rollback target."""
    if done % run.cfg.train.eval_every or done == run.end:
        return
    ev = _evaluate(run.eval_fn, run.state.params, run.dataset.val_batches, run.place)
    run.writer.write({"step": done, **{f"eval_{k}": v for k, v in ev.items()}})
    if run.ckpt is None and int(run.state.guard.bad_streak) == 0:
        run.snapshot = to_host(run.state)


def _healthy(run: _Run, m: dict, rolled_back: bool) -> bool:
    """Whether the state may be saved: last step finite (or a loss-scale overflow), no bad streak,
    not just rolled back."""
    ok = bool(m["finite"]) or bool(m["overflow"])
    return ok and not rolled_back and int(run.state.guard.bad_streak) == 0


def _checkpoint(run: _Run, done: int, final: bool = False) -> None:
    """Save every ``checkpoint.every`` steps (and the ``final`` one), only a healthy state; a
    skipped save is logged."""
    if run.ckpt is None or (done % run.cfg.train.checkpoint.every and not final):
        return
    if run.healthy:
        run.ckpt.save(run.state)
    else:
        run.event(
            "checkpoint_skipped",
            done - 1,
            f"checkpoint due after step {done - 1} not saved: the state is not healthy (a "
            "non-finite step, a bad streak or a rollback just happened)",
        )


def _finish(run: _Run, start: int, to_the_end: bool) -> dict:
    """Final evaluation (recorded when steps ran) and, for a run that reached its last step, the
    final checkpoint of a healthy state."""
    ev = _evaluate(run.eval_fn, run.state.params, run.dataset.val_batches, run.place)
    if run.end > start:
        run.writer.write({"step": run.end, **{f"eval_{k}": v for k, v in ev.items()}})
        if to_the_end and run.ckpt is not None and run.end % run.cfg.train.checkpoint.every:
            _checkpoint(run, run.end, final=True)  # (a multiple of ``every`` was just tried)
    return ev
