"""Training-step throughput of the charlm config (C5.2): our optimiser chain vs optax's, vs PyTorch.

The same byte-level transformer (configs/charlm_pydoc.yaml: 2 layers, d_model 64, 4 heads,
context 64, batch 32) is trained by three step functions:

* ``ours``: ``jaxparadigm.train.train_step.make_train_step`` with ``jaxparadigm.optim.chain_for(cfg.optim)``
  (clip -> AdamW -> warmup-cosine schedule), guard on, state donated;
* ``optax``: the same step with ``optax.chain(clip_by_global_norm, adamw(warmup_cosine_decay))``;
* ``ours, guard off``: ``ours`` without the non-finite guard (its cost: a finiteness reduction and
  a select over params and optimiser state);
* ``torch`` (when installed): an equivalent ``nn.Module`` (pre-LN blocks, tanh-GELU, tied
  embeddings, ``scaled_dot_product_attention(is_causal=True)``) with ``clip_grad_norm_`` + AdamW +
  ``LambdaLR``, eager.

Rounds are interleaved (each variant runs ``--steps`` steps per round, blocking at the end) so
machine load hits every variant alike; we report medians of per-round steps/s, tokens/s, ratios,
and model FLOP/s (6 N per token for the parameter matmuls plus 12 L T d for attention; on a GPU
divide by the device's peak for MFU — none was available for this run).

``--sharding`` (issue 14) instead steps the same model with its state laid out by
``train.sharding.mode`` ``data``, ``zero1`` and ``fsdp`` over ``--devices K`` devices (forced host
devices on a CPU; one device, mode ``none``, as the reference), interleaved, and reports steps/s
and the ratio to ``data``, bytes per device of params and optimiser state (from the arrays'
shardings) and the compiled step's collectives. ``--num-processes N`` runs the
config through ``jaxparadigm run --num-processes N`` (N processes x K/N devices) and in one process
of K devices, alternately, ``--rounds`` times each, and compares the steps/s the runs measured
and their loss curves (max relative difference over the steps).

``--mesh [FxT,...]`` instead steps it with ``train.sharding.mode=fsdp_tensor`` on each mesh shape
over ``--devices K`` devices (default 8), next to one device and 1-D ``fsdp``: steps/s and the
state's bytes per device (benchmarks/mesh_rounds.py).

``--cpu-devices 1,2`` (issue 26) instead runs ours on K CPU devices (the ``data`` layout, as
``jaxparadigm run --cpu-devices K`` trains) for each K and torch eager, each in its own process,
in interleaved rounds (benchmarks/cpu_devices_rounds.py), and compares the losses of ours@K.

Usage: python benchmarks/train_bench.py [--rounds R] [--steps S] [--no-torch] [--json PATH]
       python benchmarks/train_bench.py --sharding [--devices 8] [--mode fsdp ...]
       python benchmarks/train_bench.py --num-processes 2 [--devices 4] [--mode fsdp]
       python benchmarks/train_bench.py --mesh [4x2,2x4] [--devices 8]
       python benchmarks/train_bench.py --cpu-devices 1,2 [--xla-flags FLAGS] [--rounds R]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shutil
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import jax
import numpy as np
import optax
from flax import nnx

from jaxparadigm.build import build_model
from jaxparadigm.config import load_config
from jaxparadigm.optim import chain_for
from jaxparadigm.train.data import build_dataset
from jaxparadigm.train.objectives import next_byte_loss
from jaxparadigm.train.sharding import (
    data_mesh,
    layout_figures,
    place,
    shard_batch,
    step_layout,
    to_host,
)
from jaxparadigm.train.train_step import init_train_state, make_train_step

CONFIG = Path(__file__).resolve().parent.parent / "configs" / "charlm_pydoc.yaml"


def _optax_chain(cfg) -> optax.GradientTransformation:
    o, s = cfg.optim, cfg.optim.schedule
    schedule = optax.warmup_cosine_decay_schedule(
        0.0, o.learning_rate, s.warmup_steps, s.decay_steps, s.end_value
    )
    return optax.chain(
        optax.clip_by_global_norm(o.clip.max_norm),
        optax.adamw(schedule, o.b1, o.b2, o.eps, weight_decay=o.weight_decay),
    )


def _jax_runner(cfg, dataset, tx, batches, guard: bool = True) -> Callable[[int], float]:
    graphdef, variables = nnx.split(build_model(cfg.model, dataset, cfg.train.seed))
    state = init_train_state(nnx.to_pure_dict(variables), tx, cfg.train.seed)
    return _stepper(make_train_step(graphdef, next_byte_loss, tx, guard=guard), state, batches)


def _stepper(step, state, batches) -> Callable[[int], float]:
    """``run(n)``: ``n`` steps from the current state over ``batches`` in turn, then block;
    returns the last step's loss."""
    box = {"state": state, "i": 0}

    def run(n: int) -> float:
        for _ in range(n):
            box["state"], metrics = step(box["state"], batches[box["i"] % len(batches)])
            box["i"] += 1
        return float(jax.block_until_ready(metrics["loss"]))

    return run


def _interleaved(runners: dict, rounds: int, steps: int) -> tuple[dict[str, float], float]:
    """Median steps/s of each runner over ``rounds`` interleaved rounds of ``steps`` steps, and the
    1-minute load average at the start."""
    per_round: dict[str, list[float]] = {k: [] for k in runners}
    load = os.getloadavg()[0]
    for _ in range(rounds):
        for name, run in runners.items():
            t0 = time.perf_counter()
            run(steps)
            per_round[name].append(steps / (time.perf_counter() - t0))
    return {k: statistics.median(v) for k, v in per_round.items()}, load


def _torch_runner(cfg, batches) -> Callable[[int], float] | None:
    try:
        import torch
        from torch import nn
    except ImportError:
        print("torch: not installed, its row is left out (pip install -e '.[crosscheck]')")
        return None
    torch.manual_seed(0)
    m, o, s = cfg.model, cfg.optim, cfg.optim.schedule
    d, h = m.d_model, m.num_heads

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.qkv, self.out = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

        def forward(self, x):
            b, t, _ = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
            q, k, v = (a.view(b, t, h, d // h).transpose(1, 2) for a in (q, k, v))
            y = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.out(y.transpose(1, 2).reshape(b, t, d))
            return x + self.fc2(nn.functional.gelu(self.fc1(self.ln2(x)), approximate="tanh"))

    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed, self.pos = nn.Embedding(m.vocab_size, d), nn.Embedding(m.context, d)
            self.blocks = nn.ModuleList([Block() for _ in range(m.num_layers)])
            self.ln_f = nn.LayerNorm(d)

        def forward(self, tokens):
            x = self.embed(tokens) + self.pos(torch.arange(tokens.shape[1]))
            for block in self.blocks:
                x = block(x)
            return self.ln_f(x) @ self.embed.weight.T

    model = LM()
    opt = torch.optim.AdamW(
        model.parameters(),
        lr=o.learning_rate,
        betas=(o.b1, o.b2),
        eps=o.eps,
        weight_decay=o.weight_decay,
    )
    warm, total = s.warmup_steps, s.decay_steps

    def factor(i):
        if i < warm:
            return i / warm
        frac = min(1.0, (i - warm) / max(1, total - warm))
        end = s.end_value / o.learning_rate
        return end + (1 - end) * 0.5 * (1 + np.cos(np.pi * frac))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, factor)
    tbatches = [torch.from_numpy(np.asarray(b["tokens"], np.int64)) for b in batches]
    box = {"i": 0}

    def run(n: int) -> float:
        for _ in range(n):
            tokens = tbatches[box["i"] % len(tbatches)]
            logits = model(tokens[:, :-1])
            loss = nn.functional.cross_entropy(
                logits.reshape(-1, logits.shape[-1]), tokens[:, 1:].reshape(-1)
            )
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), o.clip.max_norm)
            opt.step()
            sched.step()
            box["i"] += 1
        return float(loss.detach())

    return run


def _model_flops_per_token(cfg, dataset) -> float:
    graphdef, variables = nnx.split(build_model(cfg.model, dataset, 0))
    n = sum(x.size for x in jax.tree.leaves(variables))
    m = cfg.model
    return 6.0 * n + 12.0 * m.num_layers * cfg.data.seq_len * m.d_model


def _force_devices(k: int | None) -> None:
    """Ask for ``k`` host (CPU) devices; must run before JAX starts its backend."""
    if k is not None:
        flags = [f for f in os.environ.get("XLA_FLAGS", "").split() if "device_count" not in f]
        os.environ["XLA_FLAGS"] = " ".join([*flags, f"--xla_force_host_platform_device_count={k}"])


def _benchmarks_on_path() -> None:
    """Put benchmarks/ on sys.path (``jaxparadigm bench`` runs this file without it there)."""
    here = str(Path(__file__).resolve().parent)
    if here not in sys.path:
        sys.path.insert(0, here)


def _run_facts(load: float) -> dict:
    """When, on what devices and CPU, and the 1-minute load at the start: every result's header."""
    return {
        "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "device": f"{jax.device_count()} x {jax.devices()[0].platform} ({platform.machine()}, "
        f"{os.cpu_count()} cores)",
        "cpu": _cpu_info(),
        "load_average_1min_at_start": load,
    }


def _cpu_info() -> str:
    """CPU model, core count and SIMD flags, as benchmarks/index_bench.py reports them."""
    _benchmarks_on_path()
    from index_bench import cpu_info

    return cpu_info()


def _sharded_runner(cfg, dataset, mode: str, batches) -> tuple[Callable[[int], float], dict]:
    """A stepping closure for ``mode`` over all devices, and its layout_figures (or None)."""
    graphdef, variables = nnx.split(build_model(cfg.model, dataset, cfg.train.seed))
    tx = chain_for(cfg.optim)
    state = init_train_state(nnx.to_pure_dict(variables), tx, cfg.train.seed)
    layout = None
    if mode == "none":
        state, placed = jax.device_put(state), [jax.device_put(b) for b in batches]
    else:
        mesh = data_mesh()
        layout = step_layout(state, mesh, mode, cfg.train.sharding.min_size)
        state, placed = place(to_host(state), layout.state), [shard_batch(b, mesh) for b in batches]
    step = make_train_step(graphdef, next_byte_loss, tx, layout=layout)
    fig = None
    if layout is not None:
        fig = layout_figures(layout, state, step.lower(state, placed[0]).compile().as_text())
    return _stepper(step, state, placed), fig


def _sharding_bench(args) -> dict:
    """Steps/s of data / zero1 / fsdp (and one device) on the charlm step, interleaved rounds."""
    _force_devices(args.devices or 8)
    cfg = load_config(CONFIG)
    dataset = build_dataset(cfg.data)
    batches = [dataset.batch(i) for i in range(16)]
    modes = args.mode or ["none", "data", "zero1", "fsdp"]
    runners, figures = {}, {}
    for mode in modes:
        runners[mode], figures[mode] = _sharded_runner(cfg, dataset, mode, batches)
        runners[mode](3)  # compile / warm up
    med, load = _interleaved(runners, args.rounds, args.steps)
    results = {
        **_run_facts(load),
        "steps_per_s": med,
        "ratio_vs_data": {m: v / med["data"] for m, v in med.items()} if "data" in med else {},
        "placement": figures,
    }
    print(f"charlm sharded step ({results['device']}, load {load:.1f}; medians of {args.rounds})")
    print(f"  cpu: {results['cpu']}")
    for m in modes:
        fig = figures[m]
        line = f"  {m:6s} {med[m]:7.2f} steps/s"
        if "data" in med:
            line += f"  {med[m] / med['data']:5.2f}x data"
        if fig is not None:
            ops = {k: v["count"] for k, v in fig["collectives"].items() if v["count"]}
            line += (
                f"  params {fig['params_bytes_per_device']}/{fig['params_bytes_total']} B"
                f"  opt {fig['opt_state_bytes_per_device']}/{fig['opt_state_bytes_total']} B"
                f" per device  {ops}"
            )
        print(line)
    return results


@contextlib.contextmanager
def _workers_quiet():
    """Launched workers inherit a stdout that goes to /dev/null and ``TQDM_DISABLE=1``."""
    sys.stdout.flush()
    saved, old = os.dup(1), os.environ.get("TQDM_DISABLE")
    os.environ["TQDM_DISABLE"] = "1"
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 1)
            yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        if old is None:
            del os.environ["TQDM_DISABLE"]
        else:
            os.environ["TQDM_DISABLE"] = old


def _num_processes_bench(args) -> dict:
    """``--num-processes N`` x K/N devices vs one process of K devices, alternately (C5.2)."""
    import tempfile

    from jaxparadigm.app.train_launch import launch
    from jaxparadigm.build import train_from_config as train
    from jaxparadigm.train.metrics import read_metrics

    n, k = args.num_processes, args.devices or 2 * args.num_processes
    mode = (args.mode or ["fsdp"])[0]
    if k % n:
        raise SystemExit(f"--devices {k} is not a multiple of --num-processes {n}")
    _force_devices(k)  # this process: one process of k devices
    out = Path(tempfile.mkdtemp(prefix="train_bench_"))
    overrides = [
        f"out_dir={out}",
        f"train.steps={args.steps}",
        "train.log_every=1",  # every step's loss, for the curve comparison
        f"train.eval_every={args.steps}",
        "train.checkpoint.every=0",
        "train.plots=false",
        f"train.sharding.mode={mode}",
    ]
    rates: dict[str, list[float]] = {"1 process": [], f"{n} processes": []}
    rel_diff: list[float] = []  # max over steps of |multi - one| / |one| per round
    load = os.getloadavg()[0]
    try:
        for r in range(args.rounds):
            cfg = load_config(CONFIG, [*overrides, f"name=one{r}"])
            one = train(cfg, progress=False)
            rates["1 process"].append(one.steps_per_second)
            with _workers_quiet():  # their progress and `report:` lines name our temporary dir
                launch(
                    CONFIG,
                    [*overrides, f"name=multi{r}"],
                    num_processes=n,
                    devices_per_process=k // n,
                )
            recs = [x for x in read_metrics(out / f"multi{r}" / "metrics.jsonl") if "loss" in x]
            rates[f"{n} processes"].append(recs[-1]["steps_per_s"])
            multi = np.array([x["loss"] for x in sorted(recs, key=lambda x: x["step"])])
            rel_diff.append(float(np.max(np.abs(multi - one.losses) / np.abs(one.losses))))
            print(
                f"round {r + 1}/{args.rounds}: 1 process {rates['1 process'][-1]:.2f} steps/s, "
                f"{n} processes {rates[f'{n} processes'][-1]:.2f} steps/s",
                flush=True,
            )
    finally:
        shutil.rmtree(out, ignore_errors=True)
    med = {key: statistics.median(v) for key, v in rates.items()}
    results = {
        "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "setup": f"{mode}, {k} CPU devices: 1 process vs {n} processes x {k // n} devices, "
        f"{args.steps} steps per run, {args.rounds} runs each, config {CONFIG.name}",
        "cpu": _cpu_info(),
        "load_average_1min_at_start": load,
        "steps_per_s": med,
        "ratio multi/one": med[f"{n} processes"] / med["1 process"],
        "max_relative_loss_difference": max(rel_diff),
    }
    print(f"charlm {results['setup']} (load {load:.1f})")
    print(f"  cpu: {results['cpu']}")
    for key, v in med.items():
        print(f"  {key:12s} {v:7.2f} steps/s (runs: {[round(x, 2) for x in rates[key]]})")
    print(f"  ratio multi/one: {results['ratio multi/one']:.2f}x")
    print(f"  loss curves, max relative difference multi vs one: {max(rel_diff):.2e}")
    return results


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument(
        "--full", action="store_true", help="RESULTS.md's size: --rounds 7 --steps 20"
    )
    parser.add_argument("--no-torch", action="store_true")
    parser.add_argument("--json", metavar="PATH")
    parser.add_argument("--sharding", action="store_true", help="compare data / zero1 / fsdp")
    parser.add_argument("--num-processes", type=int, metavar="N", help="N processes vs one")
    parser.add_argument("--devices", type=int, default=None, metavar="K", help="devices in all")
    parser.add_argument("--mode", nargs="+", default=None, help="sharding modes to run")
    parser.add_argument(
        "--mesh",
        nargs="?",
        const="",
        default=None,
        metavar="FxT,...",
        help="the charlm step on each fsdp x tensor mesh shape (default: every shape whose "
        "tensor size divides the heads) vs one device and 1-D fsdp: steps/s and bytes per device "
        "(benchmarks/mesh_rounds.py)",
    )
    parser.add_argument(
        "--cpu-devices",
        metavar="K,...",
        help="ours on K CPU devices (data layout) for each K, e.g. 1,2 or 1,auto, vs torch eager: "
        "each in its own process, interleaved rounds (benchmarks/cpu_devices_rounds.py)",
    )
    parser.add_argument(
        "--xla-flags",
        metavar="FLAGS",
        help="with --cpu-devices: also each K with these XLA flags (write --xla-flags='--a=1 --b')",
    )
    args = parser.parse_args(argv)
    if args.full:
        parser.set_defaults(rounds=7, steps=20)
        args = parser.parse_args(argv)
    print(
        f"bench train: {'full' if args.full else 'quick'} size ({args.rounds} rounds of "
        f"{args.steps} steps); the full size of benchmarks/RESULTS.md: `jaxparadigm bench train "
        "--full` (same options plus --full; a few minutes on 2 cores, under 2 GB of memory)",
        flush=True,
    )
    if args.cpu_devices:
        _benchmarks_on_path()
        from cpu_devices_rounds import train_rounds

        results = train_rounds(args)
        if args.json:
            Path(args.json).write_text(json.dumps(results, indent=2))
        return results
    if args.mesh is not None:
        _benchmarks_on_path()
        from mesh_rounds import mesh_bench

        args.mesh_shapes = args.mesh or None
        results = mesh_bench(args)
        if args.json:
            Path(args.json).write_text(json.dumps(results, indent=2))
        return results
    if args.sharding or args.num_processes:
        run = _num_processes_bench if args.num_processes else _sharding_bench
        results = run(args)
        if args.json:
            Path(args.json).write_text(json.dumps(results, indent=2))
        return results

    cfg = load_config(CONFIG)
    dataset = build_dataset(cfg.data)
    batches = [jax.device_put(dataset.batch(i)) for i in range(16)]
    runners = {
        "ours (chain_for)": _jax_runner(cfg, dataset, chain_for(cfg.optim), batches),
        "optax chain": _jax_runner(cfg, dataset, _optax_chain(cfg), batches),
        "ours, guard off": _jax_runner(cfg, dataset, chain_for(cfg.optim), batches, guard=False),
    }
    if not args.no_torch:
        torch_run = _torch_runner(cfg, batches)
        if torch_run is not None:
            runners["torch eager"] = torch_run
    for run in runners.values():  # compile / warm up
        run(3)
    med, load = _interleaved(runners, args.rounds, args.steps)
    tokens = cfg.data.batch_size * cfg.data.seq_len
    flops_tok = _model_flops_per_token(cfg, dataset)
    results = {
        "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "device": f"{jax.devices()[0].platform} ({platform.machine()}, {os.cpu_count()} cores)",
        "load_average_1min_at_start": load,
        "tokens_per_step": tokens,
        "model_flops_per_token": flops_tok,
        "steps_per_s": med,
        "tokens_per_s": {k: v * tokens for k, v in med.items()},
        "model_gflops_per_s": {k: v * tokens * flops_tok / 1e9 for k, v in med.items()},
        "ratio ours/optax": med["ours (chain_for)"] / med["optax chain"],
        "ratio guard on/off": med["ours (chain_for)"] / med["ours, guard off"],
    }
    if "torch eager" in med:
        results["ratio ours/torch"] = med["ours (chain_for)"] / med["torch eager"]
    print(
        f"charlm step throughput ({results['device']}, load {load:.1f}; medians of {args.rounds})"
    )
    for name in med:
        print(
            f"  {name:18s} {med[name]:8.1f} steps/s {results['tokens_per_s'][name]:10.0f} tok/s "
            f"{results['model_gflops_per_s'][name]:7.2f} GFLOP/s"
        )
    for key in [k for k in results if k.startswith("ratio")]:
        print(f"  {key}: {results[key]:.2f}x")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return results


if __name__ == "__main__":
    main()
