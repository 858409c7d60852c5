"""The train loop: data checks, jitted step, guard, rollback, eval, checkpoints, metrics (C5.1).

``train(model, dataset, tx, settings)`` runs ``settings.steps`` steps of the jitted step
(:mod:`jaxparadigm.train.train_step`) and writes ``<settings.run_dir>/metrics.jsonl`` and PNG plots.
Its inputs are built objects and a typed :class:`~jaxparadigm.train.settings.TrainSettings` (a
config is mapped onto them by :mod:`jaxparadigm.build`). It is a sequence of named stages:

1. ``_setup``: check the first train batch and every validation batch against the dataset's
   schema (``validate_batch``), build the train state, placement and steps;
2. ``_resume``: with checkpoints on, continue from the newest complete checkpoint in the run
   directory (unless ``checkpoint.resume`` is false, which deletes them), truncating
   ``metrics.jsonl`` to the resumed step (one stderr line names the step resumed from);
3. per step, ``_run_step`` (faults, batch, jitted step), ``_observe`` (events), ``_guard``
   (rollback or give up), ``_log``, ``_evaluate_and_snapshot``, ``_checkpoint``;
4. ``_finish``: final evaluation and save; then the plots, drawn by the caller's ``plot``.

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

import os
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import jax
import optax
from flax import nnx

from jaxparadigm.common.numbers import check_int
from jaxparadigm.common.progress import Progress
from jaxparadigm.common.quoting import quote
from jaxparadigm.errors import ConfigError
from jaxparadigm.optim import DynamicLossScale
from jaxparadigm.train.checkpoint import (
    Checkpointer,
    CheckpointLayoutError,
    CheckpointSignatureError,
)
from jaxparadigm.train.data import Dataset, validate_batch
from jaxparadigm.train.distributed import on_primary, process_shard
from jaxparadigm.train.initial_state import initial_state
from jaxparadigm.train.metrics import MetricsWriter, read_metrics
from jaxparadigm.train.objectives import eval_metrics, loss_for
from jaxparadigm.train.run_folder import RunInterrupted
from jaxparadigm.train.settings import TrainSettings
from jaxparadigm.train.sharding import layout_figures, release, shapes_of, shard_batch, to_host
from jaxparadigm.train.step_stages import (
    EventLog,
    LoopState,
    Run,
    Steps,
    evaluate,
    final_checkpoint,
    one_step,
)
from jaxparadigm.train.train_step import TrainState, make_eval_step, make_train_step

__all__ = ["TrainResult", "check_run_arguments", "check_train_arguments", "train"]


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


def check_run_arguments(
    stop_at: int | None,
    batch_transform: Callable[[int, dict], dict] | None,
    *,
    lr_fn: Any = None,
    loss_scale: Any = None,
    progress: Any = True,
    write_plots: Any = None,
    plot: Any = None,
) -> None:
    """One ``TypeError``/``ValueError`` for the first bad call option of :func:`train`, naming
    it, its value and what was expected (before anything runs): ``stop_at`` None or an int
    ``>= 0``; ``batch_transform``, ``lr_fn``, ``plot`` None or callables; ``loss_scale`` None or
    a ``DynamicLossScale``; ``progress`` a bool; ``write_plots`` None or a bool."""
    if stop_at is not None:
        check_int("stop_at", stop_at, 0, error=ValueError, expected="None or an int")
    for name, value, what in (
        ("batch_transform", batch_transform, "a callable (step, batch) -> batch"),
        ("lr_fn", lr_fn, "None or a callable opt_steps -> learning rate (a schedule)"),
        ("plot", plot, "None or a callable (records, run_dir) -> [paths]"),
    ):
        if value is not None and not callable(value):
            raise TypeError(f"{name}: got {quote(value)}, expected {what}")
    if loss_scale is not None and not isinstance(loss_scale, DynamicLossScale):
        raise TypeError(
            f"loss_scale: got {quote(loss_scale)}, expected None or a DynamicLossScale "
            "(jaxparadigm.optim.dynamic_loss_scale())"
        )
    if not isinstance(progress, bool):
        raise TypeError(f"progress: got {quote(progress)}, expected a bool")
    if write_plots is not None and not isinstance(write_plots, bool):
        raise TypeError(
            f"write_plots: got {quote(write_plots)}, expected None (settings.plots) or a bool"
        )


def check_train_arguments(model: Any, dataset: Any, tx: Any, settings: Any) -> None:
    """One ``TypeError``/``ValueError`` for the first bad argument of :func:`train`:
    the types of ``model``/``dataset``/``tx``/``settings`` (whose fields were checked when it was
    built), a ``settings.run_dir`` that is a file, a ``settings.batch_size`` that is not the
    dataset's global batch."""
    for name, value, expected, what in (
        ("model", model, nnx.Module, "a flax.nnx.Module"),
        ("dataset", dataset, Dataset, "a jaxparadigm.train.Dataset"),
        ("tx", tx, optax.GradientTransformation, "an optax.GradientTransformation"),
        ("settings", settings, TrainSettings, "a jaxparadigm.train.TrainSettings"),
    ):
        if not isinstance(value, expected):
            hint = (
                " (an optimiser factory: call it, e.g. optax.adam(1e-3))" if callable(value) else ""
            )
            raise TypeError(f"{name}: got {type(value).__name__}, expected {what}{hint}")
    if settings.run_dir.exists() and not settings.run_dir.is_dir():
        raise ValueError(
            f"settings.run_dir={os.fspath(settings.run_dir)!r}: is a file, expected a directory"
        )
    rows = {spec[0][0] for spec in dataset.schema.values()}  # this process's rows of a batch
    global_rows = {r * dataset.shard[1] for r in rows}
    if global_rows != {settings.batch_size}:
        raise ValueError(
            f"settings.batch_size={settings.batch_size!r}: expected "
            f"{', '.join(map(str, sorted(global_rows)))}, the dataset's global batch (its "
            f"schema's rows x {dataset.shard[1]} process(es))"
        )


def _step_progress(start: int, end: int, name: str, enabled: bool, t0: float) -> Progress:
    """Training's progress of steps ``start + 1 .. end`` (``NAME: step N/END``): the first step
    compiles, so its line is timed from ``t0`` (the call's start) and the rate counts the rest."""
    count = "step {done}/{total}"
    return Progress(end, name, initial=start, count=count, enabled=enabled, t0=t0, compiles=True)


def train(
    model: nnx.Module,
    dataset: Dataset,
    tx: optax.GradientTransformation,
    settings: TrainSettings,
    *,
    lr_fn: Callable | None = None,
    loss_scale: DynamicLossScale | None = None,
    stop_at: int | None = None,
    batch_transform: Callable[[int, dict], dict] | None = None,
    progress: bool = True,
    write_plots: bool | None = None,
    plot: Callable | None = None,
) -> TrainResult:
    """Train ``model`` (in place, flax NNX's way: during the call it holds only its parameters'
    shapes, then the last state's, laid out, also after an abort or Ctrl-C) on ``dataset`` with
    the optax chain ``tx`` for ``settings.steps`` steps (C5.1, C5.2).

    ``lr_fn(opt_steps)`` is the schedule (logged as ``lr``); ``loss_scale`` a
    ``DynamicLossScale`` or None. ``stop_at`` ends the call early at that data step, like a crash
    (no final checkpoint); a later call resumes from the newest checkpoint.
    ``batch_transform(step, batch)`` is applied to each train batch after validation
    (augmentation, or fault injection in tests). ``plot(records, run_dir) -> [paths]`` draws the
    run's plots (e.g. ``jaxparadigm.app.train_plots.plot_training``) when ``write_plots`` (default
    ``settings.plots``), on the primary process. Raises :class:`TrainingAborted` when the guard
    gives up, ``ConfigError``/``CheckpointError`` (input errors) for an unusable run directory,
    one ``TypeError``/``ValueError`` for a bad argument before any step runs
    (:func:`check_train_arguments`, :func:`check_run_arguments`).
    """
    t0 = time.perf_counter()  # "step 1 (compiled and ran in ...)" counts set-up and compiling
    check_train_arguments(model, dataset, tx, settings)
    options = {"lr_fn": lr_fn, "loss_scale": loss_scale, "progress": progress, "plot": plot}
    check_run_arguments(stop_at, batch_transform, write_plots=write_plots, **options)
    _check_data(dataset)
    state, steps, placement = _setup(model, dataset, tx, settings, lr_fn, loss_scale)
    ckpt = _open_checkpoints(settings)
    bar, loop = None, None
    try:
        state, resumed_from, log = _resume(ckpt, state, settings, progress and _primary())
        start = int(state.step)
        end = max(start, settings.steps if stop_at is None else min(settings.steps, stop_at))
        run = Run(settings, dataset, steps, ckpt, log, batch_transform, end)
        loop, state = LoopState(state, snapshot=to_host(state)), None  # the loop alone holds it
        bar = _step_progress(start, end, settings.name, progress and _primary(), t0)
        try:
            for step in range(start, end):
                one_step(run, loop, step)
                bar.update(1, loop.postfix, loop.clock.steps_per_second() or None)
        except KeyboardInterrupt:  # Ctrl-C: one line from the CLI, how to resume
            bar.close()
            latest = ckpt.latest_step() if ckpt is not None else None
            resumes = settings.checkpoint.resume
            raise RunInterrupted(len(loop.losses) + start, latest, resumes) from None
        final_eval = _finish(run, loop, start, stop_at is None)
    finally:
        _close(bar, ckpt, model, loop)
    plots = write_plots if write_plots is not None else settings.plots
    return _result(run, loop, final_eval, resumed_from, placement, plot if plots else None)


def _primary() -> bool:
    return jax.process_index() == 0


def _close(
    bar: Progress | None, ckpt: Checkpointer | None, model: nnx.Module, loop: LoopState | None
) -> None:
    """End of :func:`train`, however it ends: the progress line and the checkpoints closed,
    ``model`` pointed at the last state (:func:`_hand_back`)."""
    if bar is not None:
        bar.close()
    if ckpt is not None:
        ckpt.close()
    _hand_back(model, loop)


def _hand_back(model: nnx.Module, loop: LoopState | None) -> None:
    """Point ``model`` at the last state's parameters (none when the run stopped before its
    loop, or a step that took them did not return: an interrupt)."""
    if loop is None:
        return
    if not any(x.is_deleted() for x in jax.tree_util.tree_leaves(loop.state.params)):
        _point_model(model, None, loop.state.params)


def _result(run: Run, loop: LoopState, final_eval, resumed_from, placement, plot):
    """The :class:`TrainResult`, after ``plot`` (primary process; None: no plots)."""
    s = run.settings
    plots = []
    if plot is not None and _primary():
        plots = plot(read_metrics(run.log.writer.path), s.run_dir)
    sps = loop.clock.steps_per_second()
    return TrainResult(
        state=loop.state,
        losses=loop.losses,
        records=run.log.writer.records,
        events=run.log.events,
        final_eval=final_eval,
        run_dir=s.run_dir,
        plots=plots,
        steps_per_second=sps,
        examples_per_second=sps * s.batch_size,
        resumed_from=resumed_from,
        step_latency_ms=loop.clock.latency_ms(),
        placement=placement,
    )


def _check_data(dataset: Dataset) -> None:
    """This process's shard; the first train batch and every validation batch fit the schema."""
    if dataset.shard != process_shard():
        raise ValueError(
            f"dataset: got the rows of shard {dataset.shard}, expected this process's shard "
            f"{process_shard()} (build it with jaxparadigm.build.dataset_for(cfg))"
        )
    validate_batch(dataset.batch(0), dataset.schema)
    for vb in dataset.val_batches:
        validate_batch(vb, dataset.schema)


def _setup(model, dataset: Dataset, tx, settings: TrainSettings, lr_fn, loss_scale):
    """``(state, steps, placement)``: fresh state laid out (:mod:`jaxparadigm.train.initial_state`;
    ``model`` is pointed at its parameters), the jitted train and eval steps, and (sharded runs)
    the placement figures of the compiled step."""
    graphdef, variables = nnx.split(model)
    state, layout = initial_state(variables, tx, settings, loss_scale)
    _point_model(model, variables, jax.eval_shape(lambda: state.params))  # released
    del variables
    mesh = layout.mesh if layout is not None else None
    place_batch = jax.device_put if mesh is None else (lambda b: shard_batch(b, mesh))
    step_fn = make_train_step(
        graphdef,
        loss_for(dataset.kind),
        tx,
        lr_fn=lr_fn,
        loss_scale=loss_scale,
        guard=settings.guard.enabled,
        grad=settings.grad,
        layout=layout,
    )
    eval_fn = make_eval_step(graphdef, lambda m, b: eval_metrics(dataset.kind, m, b), layout)
    placement = None
    if layout is not None:
        args = (state, place_batch(dataset.batch(0)))
        fault = settings.faults.grad_fault(0)
        hlo = step_fn.lower(*args, *(() if fault is None else (fault,))).compile().as_text()
        if hlo is None:  # jax: "unavailable, e.g. based on backend, compiler, or runtime"
            raise RuntimeError(
                "the compiled train step has no HLO text on this backend; the sharded layout's "
                "collective figures are read from it"
            )
        placement = layout_figures(layout, state, hlo)
    return state, Steps(step_fn, eval_fn, place_batch), placement


def _point_model(model: nnx.Module, variables: nnx.State | None, params: Any) -> None:
    """Make ``model``'s parameters ``params`` (no copy): during the run their shapes
    (``jax.ShapeDtypeStruct``: the model's own first copy is released, and it holds no array the
    steps take), at the end the last state's arrays (C4.1)."""
    variables = nnx.split(model)[1] if variables is None else variables
    nnx.replace_by_pure_dict(variables, params)
    nnx.update(model, variables)


def _open_checkpoints(settings: TrainSettings) -> Checkpointer | None:
    """The run's checkpointer (None when checkpoints are off); a fresh run deletes old ones."""
    c, run_dir = settings.checkpoint, settings.run_dir
    if c.every > 0 and not c.resume:
        on_primary(lambda: shutil.rmtree(run_dir / "checkpoints", ignore_errors=True), "fresh")
    return (
        Checkpointer(run_dir / "checkpoints", settings.signed, keep=c.keep) if c.every > 0 else None
    )


def _resume(ckpt: Checkpointer | None, state: TrainState, settings: TrainSettings, announce: bool):
    """``(state, resumed_from, log)``: the newest complete checkpoint restored (if any) and the
    event log over metrics.jsonl truncated to it; ``announce``: say so in one stderr line (with
    the progress lines: a call with ``progress=False`` prints nothing, the report and the event
    log record it)."""
    latest = ckpt.latest_step() if ckpt is not None else None
    if ckpt is not None and latest is not None and latest > settings.steps:
        raise ConfigError(
            f"train.steps: got {settings.steps}, but the newest checkpoint in "
            f"{ckpt.directory} is step {latest}; expected >= {latest} to resume this run "
            "(or another name to start a separate one)"
        )
    if ckpt is not None and latest is not None:
        template = shapes_of(state)
        release(state)  # replaced by the checkpoint: freed before it is read into the layout
        try:
            state = ckpt.restore(template)
        except CheckpointLayoutError as err:
            sh = settings.sharding
            raise CheckpointLayoutError(
                f"{err} (the config's layout: train.sharding.mode={sh.mode!r}"
                + (f", train.sharding.tensor={sh.tensor}" if sh.mode == "fsdp_tensor" else "")
                + "); resume it with another train.sharding.mode / train.sharding.tensor"
            ) from err
        except CheckpointSignatureError as err:
            raise CheckpointSignatureError(
                f"{err} The checkpoints are left untouched: to resume them, run with the "
                "checkpoint's values; to train this config instead, give the run another name "
                "(name=...)."
            ) from None
    if ckpt is not None and latest is not None and announce:  # one line: this call goes on a run
        print(
            f"{settings.name}: resumed from checkpoint step {latest} of {settings.steps} "
            f"({ckpt.directory})",
            file=sys.stderr,
            flush=True,
        )
    log = EventLog(MetricsWriter(settings.run_dir / "metrics.jsonl", resume_from=latest))
    skipped = ckpt.incomplete if ckpt is not None else {}
    if latest is not None or skipped:
        log.event(
            "resume",
            latest or 0,
            (f"resumed from checkpoint step {latest}" if latest else "started afresh")
            + "".join(f"; skipped incomplete step {k} ({v})" for k, v in sorted(skipped.items()))
            + "; records of later steps from the interrupted run were dropped",
        )
    return state, latest, log


def _finish(run: Run, loop: LoopState, start: int, to_the_end: bool) -> dict:
    """Final evaluation (recorded when steps ran) and, for a run that reached its last step, the
    final checkpoint of a healthy state."""
    ev = evaluate(run.steps.eval, loop.state.params, run.dataset.val_batches, run.steps.place)
    if run.end > start:
        run.log.writer.write({"step": run.end, **{f"eval_{k}": v for k, v in ev.items()}})
        if to_the_end and run.ckpt is not None and run.end % run.settings.checkpoint.every:
            final_checkpoint(run, loop)  # (a multiple of ``every`` was just tried)
    return ev
