"""The train loop: data checks, jitted step, guard + rollback, eval, checkpoints, metrics, plots (C5.1).

``train(cfg)`` runs ``cfg.train.steps`` steps of the jitted step (:mod:`jaxparadigm.train.step`) and
writes ``<out_dir>/<name>/metrics.jsonl`` and PNG plots. Before the first step the first train batch
and every validation batch are checked against the dataset's schema (``validate_batch``). A
non-finite step is skipped by the step itself; after ``guard.max_bad_steps`` in a row the loop
restores the last good state (the newest checkpoint when checkpoints are on, otherwise an in-memory
snapshot taken every ``eval_every`` steps), multiplies the learning-rate scale by
``guard.lr_decay_on_rollback`` and carries on with the *next* batch (data and RNG keep advancing).
A float16 loss-scale overflow (logged as an ``"overflow"`` event) is skipped and halves the scale
but is not a guard bad step, and a rollback keeps the *current* loss-scale state (the restored
one may be the too-large scale that was being calibrated away).
With checkpoints on, ``train`` resumes from the newest checkpoint in the run directory (unless
``checkpoint.resume`` is false).
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx
from tqdm.auto import tqdm

from jaxparadigm.models.mlp import MLP
from jaxparadigm.models.transformer import TransformerLM
from jaxparadigm.optim import chain_for, dynamic_loss_scale, schedule_for
from jaxparadigm.train.checkpoint import Checkpointer, CheckpointSignatureError
from jaxparadigm.train.data import Dataset, build_dataset, validate_batch
from jaxparadigm.train.guard import (
    GuardEvent,
    GuardState,
    rollback_lr_scale,
    should_rollback,
)
from jaxparadigm.train.metrics import MetricsWriter, read_metrics
from jaxparadigm.train.objectives import eval_metrics, loss_for
from jaxparadigm.train.plots import plot_training
from jaxparadigm.train.sharding import data_mesh, initialize_distributed, replicate, shard_batch
from jaxparadigm.train.step import TrainState, init_train_state, make_eval_step, make_train_step

__all__ = ["TrainResult", "build_model", "run_dir_for", "train"]


class TrainResult(NamedTuple):
    """What a run leaves behind: final state, per-step losses, records, guard events, files."""

    state: TrainState
    losses: list  # float loss of every step run in this call (NaN where skipped)
    records: list  # metrics records (also in metrics.jsonl)
    events: list  # GuardEvent per skip / rollback
    final_eval: dict
    run_dir: Path
    plots: list
    steps_per_second: float
    examples_per_second: float
    resumed_from: int | None
    step_latency_ms: dict  # {"p50": ..., "p99": ...} of host-observed step times (after compile)


def run_dir_for(cfg) -> Path:
    """``<cfg.out_dir>/<cfg.name>``."""
    return Path(cfg.out_dir) / cfg.name


def build_model(model_cfg, dataset: Dataset, seed: int) -> nnx.Module:
    """The NNX model a ``ModelConfig`` describes, sized to ``dataset`` (C5.1)."""
    m = model_cfg
    rngs = nnx.Rngs(seed)
    if m.kind == "mlp":
        if dataset.kind == "pydoc_chars":
            raise ValueError("model.kind: got 'mlp', expected 'transformer' for data pydoc_chars")
        if m.num_outputs != dataset.num_outputs:
            raise ValueError(
                f"model.num_outputs: got {m.num_outputs}, expected {dataset.num_outputs} "
                f"for data kind {dataset.kind!r}"
            )
        return MLP(dataset.in_features, m.hidden, m.num_outputs, dtype=m.dtype, rngs=rngs)
    if dataset.kind != "pydoc_chars":
        raise ValueError(f"model.kind: got 'transformer', expected 'mlp' for data {dataset.kind!r}")
    if m.vocab_size < 256:
        raise ValueError(f"model.vocab_size: got {m.vocab_size}, expected >= 256 (bytes)")
    if m.context < dataset.in_features:
        raise ValueError(
            f"model.context: got {m.context}, expected >= data.seq_len={dataset.in_features}"
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


def _place_like(tree, like):
    """Put host arrays of ``tree`` where the leaves of ``like`` live (same sharding)."""
    return jax.tree_util.tree_map(lambda x, y: jax.device_put(x, y.sharding), tree, like)


def _evaluate(eval_fn, params, batches, place) -> dict:
    sums: dict[str, float] = {}
    for b in batches:
        for k, v in jax.device_get(eval_fn(params, place(b))).items():
            sums[k] = sums.get(k, 0.0) + float(v)
    return {k: v / len(batches) for k, v in sums.items()}


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
    (no final checkpoint); a later call resumes from the newest checkpoint. ``batch_transform(step, batch)`` is
    applied to each train batch after validation (augmentation, or fault injection in tests).
    """
    c = cfg.train
    if stop_at is not None and (
        isinstance(stop_at, bool) or not isinstance(stop_at, int) or stop_at < 0
    ):
        raise ValueError(f"stop_at: got {stop_at!r}, expected None or an int >= 0")
    if batch_transform is not None and not callable(batch_transform):
        raise TypeError(
            f"batch_transform: got {type(batch_transform).__name__}, expected a callable"
        )
    initialize_distributed(c.distributed)
    run_dir = Path(run_dir) if run_dir is not None else run_dir_for(cfg)
    dataset = dataset if dataset is not None else build_dataset(cfg.data)
    validate_batch(dataset.batch(0), dataset.schema)
    for vb in dataset.val_batches:
        validate_batch(vb, dataset.schema)

    model = build_model(cfg.model, dataset, c.seed)
    graphdef, variables = nnx.split(model)
    params = nnx.to_pure_dict(variables)
    tx = tx if tx is not None else chain_for(cfg.optim)
    lr_fn = lr_fn if lr_fn is not None else schedule_for(cfg.optim)
    ls_cfg = cfg.optim.loss_scale
    loss_scale = (
        dynamic_loss_scale(init_scale=ls_cfg.init_scale, growth_interval=ls_cfg.growth_interval)
        if ls_cfg.enabled
        else None
    )
    state = init_train_state(params, tx, c.seed, loss_scale)

    if c.sharding.mode == "data":
        mesh = data_mesh()
        state = replicate(state, mesh)
        place = lambda b: shard_batch(b, mesh)
    else:
        state = jax.device_put(state)
        place = jax.device_put

    if c.checkpoint.every > 0 and not c.checkpoint.resume:
        shutil.rmtree(run_dir / "checkpoints", ignore_errors=True)
    ckpt = (
        Checkpointer(run_dir / "checkpoints", cfg, keep=c.checkpoint.keep)
        if c.checkpoint.every > 0
        else None
    )
    resumed_from = None
    if ckpt is not None and ckpt.latest_step() is not None:
        resumed_from = ckpt.latest_step()
        try:
            state = ckpt.restore(state)
        except CheckpointSignatureError as err:
            raise CheckpointSignatureError(
                f"{err} To start this run afresh instead, set train.checkpoint.resume=false "
                "or give it another name."
            ) from None

    step_fn = make_train_step(
        graphdef,
        loss_for(dataset.kind),
        tx,
        lr_fn=lr_fn,
        loss_scale=loss_scale,
        guard=c.guard.enabled,
        grad=c.grad,
    )
    eval_fn = make_eval_step(graphdef, lambda m, b: eval_metrics(dataset.kind, m, b))
    # A resumed run appends to the interrupted run's metrics file.
    writer = MetricsWriter(run_dir / "metrics.jsonl", append=resumed_from is not None)

    end = c.steps if stop_at is None else min(c.steps, stop_at)
    start = int(state.step)
    snapshot = jax.device_get(state)  # in-memory rollback target when checkpoints are off
    events: list[GuardEvent] = []
    losses: list[float] = []
    bar = tqdm(total=end - start, disable=not progress, desc=cfg.name, leave=False)
    t_first = None
    step_times: list[float] = []
    batch_size = cfg.data.batch_size
    for step in range(start, end):
        batch = dataset.batch(step)
        if batch_transform is not None:
            batch = batch_transform(step, batch)
        t_step = time.perf_counter()
        state, metrics = step_fn(state, place(batch))
        m = jax.device_get(metrics)
        if t_first is not None:
            step_times.append(time.perf_counter() - t_step)
        if t_first is None:  # exclude the compiling first step from throughput
            t_first, n_timed = time.perf_counter(), 0
        else:
            n_timed += 1
        losses.append(float(m["loss"]))
        done = step + 1
        if bool(m.get("overflow", False)):
            s_used = float(m["loss_scale"])
            msg = (
                f"loss-scale overflow at step {step} (scale {s_used:g}): update skipped, "
                "scale halved"
            )
            events.append(GuardEvent("overflow", step, msg))
            writer.write({"step": step, "event": "overflow", "message": msg})
        elif not bool(m["finite"]):
            msg = f"non-finite loss/gradients at step {step}: update skipped"
            events.append(GuardEvent("skip", step, msg))
            writer.write({"step": step, "event": "skip", "message": msg})
        if c.guard.enabled and should_rollback(state.guard, c.guard.max_bad_steps):
            state, msg = _rollback(state, ckpt, snapshot, c.guard.lr_decay_on_rollback)
            events.append(GuardEvent("rollback", step, msg))
            writer.write({"step": step, "event": "rollback", "message": msg})
        if done % c.log_every == 0 or done == end:
            elapsed = time.perf_counter() - t_first
            sps = n_timed / elapsed if elapsed > 0 and n_timed else 0.0
            rec = {k: m[k] for k in ("loss", "lr", "grad_norm") if k in m}
            rec.update(step=done, steps_per_s=sps, examples_per_s=sps * batch_size)
            if "loss_scale" in m:
                rec["loss_scale"] = m["loss_scale"]
            writer.write(rec)
            bar.set_postfix(loss=f"{rec['loss']:.4f}", lr=f"{rec['lr']:.2e}", it_s=f"{sps:.1f}")
        if done % c.eval_every == 0 and done != end:
            ev = _evaluate(eval_fn, state.params, dataset.val_batches, place)
            writer.write({"step": done, **{f"eval_{k}": v for k, v in ev.items()}})
            if ckpt is None and int(state.guard.bad_streak) == 0:
                snapshot = jax.device_get(state)
        if ckpt is not None and done % c.checkpoint.every == 0 and int(state.guard.bad_streak) == 0:
            ckpt.save(state)
        bar.update(1)
    bar.close()
    elapsed = time.perf_counter() - t_first if t_first is not None else 0.0
    sps = n_timed / elapsed if t_first is not None and elapsed > 0 and n_timed else 0.0
    final_eval = _evaluate(eval_fn, state.params, dataset.val_batches, place)
    writer.write({"step": end, **{f"eval_{k}": v for k, v in final_eval.items()}})
    if ckpt is not None:  # a run cut short by stop_at behaves like a crash: no final save
        if end == c.steps and ckpt.latest_step() != end and int(state.guard.bad_streak) == 0:
            ckpt.save(state)
        ckpt.close()
    plots = []
    if (c.plots if write_plots is None else write_plots) and jax.process_index() == 0:
        plots = plot_training(_all_records(writer), run_dir)
    return TrainResult(
        state=state,
        losses=losses,
        records=writer.records,
        events=events,
        final_eval=final_eval,
        run_dir=run_dir,
        plots=plots,
        steps_per_second=sps,
        examples_per_second=sps * batch_size,
        resumed_from=resumed_from,
        step_latency_ms={
            q: float(np.percentile(step_times, int(q[1:])) * 1e3) if step_times else float("nan")
            for q in ("p50", "p99")
        },
    )


def _all_records(writer: MetricsWriter) -> list[dict]:
    return read_metrics(writer.path) if writer.path.exists() else writer.records


def _rollback(state: TrainState, ckpt, snapshot, factor: float) -> tuple[TrainState, str]:
    """Restore the last good state; keep data position, RNG and loss scale; lower the lr scale."""
    if ckpt is not None and ckpt.latest_step() is not None:
        good = ckpt.restore(state)
        source = f"checkpoint step {int(good.step)}"
    else:
        good = _place_like(snapshot, state)
        source = f"in-memory snapshot of step {int(good.step)}"
    new_scale = rollback_lr_scale(float(state.lr_scale), factor)
    g = state.guard
    restored = good._replace(
        step=state.step,
        rng=state.rng,
        loss_scale=state.loss_scale,
        lr_scale=jax.device_put(jnp.asarray(new_scale, jnp.float32), state.lr_scale.sharding),
        guard=GuardState(
            bad_streak=jnp.zeros_like(g.bad_streak), skipped=g.skipped, rollbacks=g.rollbacks + 1
        ),
    )
    msg = (
        f"{int(g.bad_streak)} consecutive bad steps at step {int(state.step) - 1}: rolled back to "
        f"{source}, lr scale {float(state.lr_scale):g} -> {new_scale:g}"
    )
    return restored, msg
