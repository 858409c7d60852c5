"""The tasks ``train``, ``mixed_precision``, ``overflow`` of ``jaxparadigm run`` (C5.1, C4.2, C4.3).

Each task runs real code and writes ``<out_dir>/<name>/report.md`` with the measured figures and
PNG plots next to it; the returned value is the report's path.

* ``train``: :func:`jaxparadigm.build.train_from_config`, then data drift of the validation split
  (and of a deliberately shifted copy) against the train split, guard and checkpoint summaries.
* ``mixed_precision``: the same training once per Adam ``nu`` storage dtype (float16 with dynamic
  loss scaling when ``mixed_precision.loss_scaling``); loss curves overlaid; ``nu`` bytes and
  underflow fraction from ``jaxparadigm.optim.adam_state_report``.
* ``overflow``: ``jaxparadigm.claims.evidence.overflow.overflow_evidence`` around
  ``overflow.center`` with the config's LinearLR settings: naive ``+1`` vs ``safe_increment`` int32
  counters (vs PyTorch when installed); learning rates plotted.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import jax
import numpy as np

from jaxparadigm.app.train_plots import plot_curves, plot_training
from jaxparadigm.build import dataset_for, join_run, run_dir_for, train_from_config
from jaxparadigm.claims.evidence.overflow import overflow_evidence
from jaxparadigm.config import Config, to_dict
from jaxparadigm.errors import ConfigError
from jaxparadigm.optim import adam_state_report
from jaxparadigm.train import SIGNED_KEYS, Dataset, TrainResult, drift_report, state_signature

__all__ = [
    "drift_features",
    "run_mixed_precision",
    "run_overflow",
    "run_train",
    "used_config",
]


def drift_features(dataset: Dataset, split: str = "train", max_rows: int = 4000) -> np.ndarray:
    """``[n, features]`` rows to compare for drift (C5.1).

    Array data: the inputs ``x`` themselves. Byte corpus: per 64-byte window the mean byte value and
    the fractions of whitespace, uppercase, digits and punctuation.
    """
    part = dataset.train if split == "train" else dataset.val
    if part.y is not None:
        return np.asarray(part.x[:max_rows], np.float64)
    stream = part.x[: (part.x.size // 64) * 64].reshape(-1, 64)[:max_rows]
    is_in = lambda chars: np.isin(stream, np.frombuffer(chars, np.uint8)).mean(axis=1)
    upper = ((stream >= 65) & (stream <= 90)).mean(axis=1)
    digit = ((stream >= 48) & (stream <= 57)).mean(axis=1)
    return np.stack(
        [stream.mean(axis=1), is_in(b" \n\t"), upper, digit, is_in(b".,:;()[]{}'\"=-*")], axis=1
    )


def _fmt(x) -> str:
    return f"{x:.4g}" if isinstance(x, float) else str(x)


#: Per model kind, the ``model.*`` fields that kind reads (the others are not shown in a report).
_MODEL_FIELDS = {
    "mlp": ("kind", "hidden", "num_outputs", "dtype"),
    "transformer": (
        "kind", "vocab_size", "d_model", "num_layers", "num_heads", "context", "tie_embeddings",
        "dtype", "dropout",
    ),
}  # fmt: skip
#: Per data kind, the ``data.*`` fields that kind reads.
_DATA_FIELDS = {
    "spirals": ("kind", "n_samples", "noise", "batch_size", "val_fraction", "seed"),
    "regression": ("kind", "n_samples", "noise", "batch_size", "val_fraction", "seed"),
    "pydoc_chars": ("kind", "seq_len", "batch_size", "val_fraction", "seed"),
}


def used_config(cfg: Config) -> dict:
    """The parts of ``cfg`` (as plain data) that its task used (C5.1): the task's own section
    (``mixed_precision``, ``overflow``) only for that task, never ``retrieval`` or ``claims``, and
    only the ``model``/``data`` fields their ``kind`` reads (an MLP run shows no transformer sizes),
    no ``train.faults`` when none are planned, no ``train.distributed`` in a one-process run.
    """
    plain = to_dict(cfg)
    skip = {"retrieval", "claims", "mixed_precision", "overflow"} - {cfg.task}
    out = {k: v for k, v in plain.items() if k not in skip}
    if cfg.task == "overflow":  # overflow_evidence reads only optim's rate and schedule
        return {k: v for k, v in out.items() if k not in ("model", "data", "train")}
    for section, fields in (("model", _MODEL_FIELDS), ("data", _DATA_FIELDS)):
        keep = fields.get(plain[section]["kind"])
        if keep is not None:
            out[section] = {k: v for k, v in plain[section].items() if k in keep}
    train = dict(out["train"])
    if not any(v for v in train["faults"].values()):
        del train["faults"]  # no fault injection planned
    dist = train["distributed"]
    if dist["coordinator_address"] is None and jax.process_count() == 1:
        del train["distributed"]  # one process: no jax.distributed group
    out["train"] = train
    return out


def _config_block(cfg) -> str:
    import yaml

    return "```yaml\n" + yaml.safe_dump(used_config(cfg), sort_keys=False) + "```"


def _write_report(out: Path, lines: list[str], cfg) -> Path:
    """Write ``lines`` plus the config as YAML to ``out/report.md`` (process 0 of a multi-process
    run only); returns its path."""
    report = out / "report.md"
    if jax.process_index() != 0:
        return report
    report.write_text(
        "\n".join([*lines, "## Config", "", _config_block(cfg), ""]), encoding="utf-8"
    )
    return report


def _train_section(result: TrainResult, cfg) -> list[str]:
    g = result.state.guard
    lines = [
        "## Training",
        "",
        f"- steps run: {int(result.state.step)} of {cfg.train.steps}"
        + (f" (resumed from checkpoint step {result.resumed_from})" if result.resumed_from else ""),
        "- final evaluation: "
        + ", ".join(f"{k} = {_fmt(v)}" for k, v in sorted(result.final_eval.items())),
        _loss_line(result)
        if result.losses
        else "- no steps run in this call (the earlier calls' losses are in metrics.jsonl)",
        *(  # no throughput or latency of a call that ran no step (a finished run's report again)
            [
                f"- throughput (after compilation, on a machine shared with other jobs): "
                f"{result.steps_per_second:.1f} steps/s, {result.examples_per_second:.0f} "
                "examples/s",
                f"- step latency (host-observed, incl. metrics fetch): P50 "
                f"{result.step_latency_ms['p50']:.2f} ms, "
                f"P99 {result.step_latency_ms['p99']:.2f} ms",
            ]
            if result.losses
            else []
        ),
        f"- guard: {int(g.skipped)} step(s) skipped, {int(g.rollbacks)} rollback(s), "
        f"lr scale {float(result.state.lr_scale):g}",
        f"- metrics: `{result.run_dir / 'metrics.jsonl'}`",
        "",
    ]
    for event in result.events[:20]:
        lines.append(f"  - {event.kind} @ step {event.step}: {event.message}")
    lines += [f"![{p.stem}]({p.name})" for p in result.plots]
    return lines + _placement_section(result.placement)


def _schema_text(schema: dict) -> str:
    """The dataset's schema, its dtypes by name: ``{field: (shape, dtype[, (lo, hi)])}``."""
    return str({k: (v[0], np.dtype(v[1]).name, *v[2:]) for k, v in schema.items()})


def _loss_line(result: TrainResult) -> str:
    """The train loss of the first and last step of this call, each named by its step: a resumed
    call's first loss is that of the step it resumed at, not the run's."""
    first = (result.resumed_from or 0) + 1
    last = first + len(result.losses) - 1
    line = (
        f"- train loss at step {first} / step {last}: {_fmt(result.losses[0])} / "
        f"{_fmt(result.losses[-1])}"
    )
    if result.resumed_from:
        line += f" (steps 1-{result.resumed_from} ran before the resume: metrics.jsonl)"
    return line


def _placement_section(fig: dict | None) -> list[str]:
    """The measured placement of a sharded run (C4.1, C5.2): bytes per device, collectives."""
    if fig is None:
        return []
    ratio = lambda k: fig[f"{k}_bytes_total"] / max(1, fig[f"{k}_bytes_per_device"])
    ops = ", ".join(
        f"{op} {v['count']} ({v['bytes']} B)" for op, v in fig["collectives"].items() if v["count"]
    )
    return [
        "",
        "## Sharding",
        "",
        f"- mode `{fig['mode']}` over {fig['devices']} device(s) in {fig['processes']} process(es)"
        + (
            f", mesh {' x '.join(f'{k} {v}' for k, v in fig['mesh'].items())}"
            if "mesh" in fig
            else ""
        ),
        f"- params: {fig['params_bytes_per_device']} bytes on the fullest device (of "
        f"{fig['params_bytes_total']}: {ratio('params'):.2f}x less than a full copy)",
        f"- optimiser state: {fig['opt_state_bytes_per_device']} bytes on the fullest device (of "
        f"{fig['opt_state_bytes_total']}: {ratio('opt_state'):.2f}x less)",
        "- collectives in the compiled step (count, result bytes per device): " + (ops or "none"),
        "",
    ]


def run_train(cfg: Config) -> Path:
    """Task ``train`` (C5.1, C5.2): train, then report data checks, drift, guard, checkpoints.

    Writes ``<cfg.out_dir>/<cfg.name>/report.md`` (and the run's plots); returns its path."""
    join_run(cfg)  # before any JAX op; train_from_config does not join again
    out = run_dir_for(cfg)
    dataset = dataset_for(cfg)
    result = train_from_config(cfg, dataset=dataset, plot=plot_training)
    ref = drift_features(dataset, "train")
    cur = drift_features(dataset, "val")
    shifted = cur.copy()
    shifted[:, 0] += 0.5 * ref[:, 0].std()  # a known half-sigma shift of feature 0
    same, moved = drift_report(ref, cur), drift_report(ref, shifted)
    lines = [
        f"# {cfg.name}: training report (C5.1, C5.2)",
        "",
        f"Data `{cfg.data.kind}`, model `{cfg.model.kind}`, optimiser `{cfg.optim.name}` "
        f"(lr {cfg.optim.learning_rate:g}, schedule `{cfg.optim.schedule.name}`), "
        f"sharding `{cfg.train.sharding.mode}`.",
        "",
        "## Data checks",
        "",
        f"- schema validation of the first train batch and {len(dataset.val_batches)} validation "
        "batch(es): passed (`validate_batch` raises on any violation, so the run would not start)",
        f"- schema: `{_schema_text(dataset.schema)}`",
        "",
        "Validation split vs train split:",
        "",
        "```",
        str(same),
        "```",
        "",
        *_split_note(cfg, same),
        "Validation split with feature 0 shifted by half a standard deviation (must be flagged): "
        + (
            "flagged."
            if 0 in moved.drifted
            else "NOT flagged: the drift check missed a known shift."
        ),
        "",
        "```",
        str(moved),
        "```",
        "",
        *_train_section(result, cfg),
        "",
    ]
    if cfg.train.checkpoint.every > 0:
        lines += [
            "## Checkpoints",
            "",
            f"- signed orbax checkpoints every {cfg.train.checkpoint.every} steps in "
            f"`{result.run_dir / 'checkpoints'}` (last {cfg.train.checkpoint.keep} kept)",
            f"- sha256 of the final state + its state-defining config ({', '.join(SIGNED_KEYS)}): "
            f"`{state_signature(result.state, cfg)}`",
            "",
        ]
    return _write_report(out, lines, cfg)


def _split_note(cfg, same) -> list[str]:
    """Why an unshifted validation split drifts: the pydoc corpus is split by topic (C5.1)."""
    if cfg.data.kind != "pydoc_chars" or not list(same.drifted):
        return []
    return [
        "The byte corpus is split by topic (validation holds other `pydoc_data.topics` entries "
        "than training), so the validation split drifts from the train split by design: the "
        "flags above describe that topic split, not a data fault. The shifted copy below is the "
        "check that the detector works.",
        "",
    ]


def _replace_optim(cfg, name: str, nu_dtype: str, loss_scaling: bool):
    optim = dataclasses.replace(
        cfg.optim,
        nu_dtype=nu_dtype,
        loss_scale=dataclasses.replace(cfg.optim.loss_scale, enabled=loss_scaling),
    )
    return dataclasses.replace(cfg, name=name, optim=optim)


def _single_process(cfg) -> None:
    """Refuse a multi-process run of a task other than ``train`` (ConfigError)."""
    if join_run(cfg):  # before any JAX op
        raise ConfigError(
            f"task: got {cfg.task!r} in a multi-process run, expected 'train' (the only task that "
            "runs over several processes)"
        )


def run_mixed_precision(cfg: Config) -> Path:
    """Task ``mixed_precision`` (C4.2): one training per Adam ``nu`` storage dtype, compared.

    Writes ``<cfg.out_dir>/<cfg.name>/report.md``; returns its path."""
    _single_process(cfg)
    out = run_dir_for(cfg)
    dataset = dataset_for(cfg)
    rows, curves = [], {}
    reference = None
    for dtype in cfg.mixed_precision.nu_dtypes:
        scaled = dtype == "float16" and cfg.mixed_precision.loss_scaling
        sub = _replace_optim(cfg, f"{cfg.name}/{dtype}", dtype, scaled)
        result = train_from_config(sub, dataset=dataset, write_plots=False)
        nu = adam_state_report(result.state.opt_state)["nu"]
        losses = np.asarray(result.losses)
        reference = losses if reference is None else reference
        label = dtype + (" + loss scaling" if scaled else "")
        curves[label] = (list(range(1, len(losses) + 1)), losses.tolist())
        rows.append(
            f"| {label} | {nu['dtype']} | {nu['bytes']} | {nu['zero_fraction']:.4f} "
            f"| {losses[-1]:.4f} | {result.final_eval['loss']:.4f} "
            f"| {np.nanmax(np.abs(losses - reference)):.3g} | {int(result.state.guard.skipped)} |"
        )
    plot = plot_curves(
        curves,
        out / "loss_by_nu_dtype.png",
        title="train loss by Adam nu dtype",
        ylabel="loss",
        logy=True,
    )
    first = cfg.mixed_precision.nu_dtypes[0]
    lines = [
        f"# {cfg.name}: Adam second-moment storage dtype (C4.2)",
        "",
        f"Same data, model, seed and steps ({cfg.train.steps}); only `optim.nu_dtype` changes. "
        "`underflow` is the fraction of stored `nu` entries that are exactly zero after training "
        "(an entry that received non-zero gradients but flushed to zero). The max |diff| column "
        f"compares each loss curve with the `{first}` run step by step.",
        "",
        "| nu dtype | stored | nu bytes | underflow | last train loss | eval loss "
        f"| max abs diff vs {first} | skipped steps |",
        "|---|---|---|---|---|---|---|---|",
        *rows,
        "",
        f"![loss by nu dtype]({plot.name})",
        "",
    ]
    return _write_report(out, lines, cfg)


def run_overflow(cfg: Config) -> Path:
    """Task ``overflow`` (C4.3): a schedule around ``overflow.center`` with naive vs saturating
    int32 counters. Writes ``<cfg.out_dir>/<cfg.name>/report.md``; returns its path."""
    _single_process(cfg)
    out = run_dir_for(cfg)
    out.mkdir(parents=True, exist_ok=True)
    sc = cfg.optim.schedule
    ev = overflow_evidence(
        center=cfg.overflow.center,
        window=cfg.overflow.window,
        base_lr=cfg.optim.learning_rate,
        start_factor=sc.start_factor,
        end_factor=sc.end_factor,
        total_iters=sc.total_iters,
        with_torch=True,
    )
    demo = ev.demo
    steps = list(demo.steps)
    curves = {
        "naive int32, unclamped formula": (steps, list(demo.lr_unclamped)),
        "naive int32, clamped linear_lr": (steps, list(demo.lr_naive_clamped)),
        "safe_increment int32": (steps, list(demo.lr_safe)),
    }
    if ev.torch_lr is not None:
        curves["torch LinearLR"] = (steps, list(ev.torch_lr))
    plot = plot_curves(
        curves, out / "lr_around_overflow.png", title="lr around 2**31-1", ylabel="lr"
    )
    wrapped = min(demo.naive_count) < 0
    negative = min(demo.lr_unclamped) < 0
    safe_const = len(set(demo.lr_safe)) == 1
    lines = [
        f"# {cfg.name}: step counter overflow (C4.3)",
        "",
        f"Counters stepped from {steps[0] - 1} across {cfg.overflow.center}.",
        "",
        f"- naive int32 `+1` counter wrapped to a negative value: **{wrapped}** "
        f"(min {min(demo.naive_count)})",
        f"- LinearLR closed form on the naive counter went negative: **{negative}** "
        f"(min lr {min(demo.lr_unclamped):.4g})",
        f"- `safe_increment` counter saturated at {max(demo.safe_count)}; its lr stayed constant: "
        f"**{safe_const}** ({demo.lr_safe[-1]:.4g})",
        "- PyTorch LinearLR (Python int counter): "
        + (
            f"min lr {min(ev.torch_lr):.4g}, last_epoch reached {max(ev.torch_last_epoch)}"
            if ev.torch_lr is not None and ev.torch_last_epoch is not None
            else "not measured (torch not installed)"
        ),
        "",
        f"![lr around overflow]({plot.name})",
        "",
        ev.table(),
        "",
    ]
    return _write_report(out, lines, cfg)
