"""``--cpu-devices K,...`` of benchmarks/train_bench.py and optim_bench.py (issue 26): our side on
K CPU devices against PyTorch, every variant in a process of its own, in interleaved rounds.

A process's CPU device count is fixed when JAX starts, so each variant is a worker process (this
file run with ``--worker SPEC``): ours with K devices for each K asked (``XLA_FLAGS`` from
``jaxparadigm.app.cpu_devices.with_cpu_devices``, the way ``jaxparadigm run --cpu-devices K``
sets it), optionally again with ``--xla-flags`` added, and one PyTorch process. Each worker builds
its runners and warms them up (compiles), then waits on its stdin. Each round asks every runner,
in an order rotated by one per round, to run ``n`` steps (an idle worker blocks on a pipe read:
it uses no CPU; ``SETTLE_S`` seconds between requests let torch's OpenMP threads stop spinning).
Medians over the rounds are reported, and each of our runners' results after the same number of
steps is compared with ours on the first K (the same numbers, within float rounding).

* train (charlm, configs/charlm_pydoc.yaml): ours steps in the ``data`` layout over K devices (one
  device: mode ``none``), clip + AdamW chain, guard on; torch eager as in train_bench. Reported:
  steps/s, tokens/s, ours / torch (>= 1 is faster than torch), relative loss difference.
* optim: our ``adam`` on ``--leaves`` leaves (sizes rounded to a multiple of every K, so each leaf
  splits) placed over K devices, and a STREAM triad over the same K devices; torch fused Adam
  (and with ``clip_grad_norm_``), torch triad. Reported: ms per step, GB/s at 28 bytes/param,
  ours / torch fused (time, <= 1 is faster than torch), relative difference of the params' sum.
"""

from __future__ import annotations

import importlib
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROTOCOL = "@@rounds "  # a worker's protocol lines on stdout start with this (others pass through)
SETTLE_S = 0.1

#: ``run(n) -> (seconds per timed call, check value)``.
Runner = Callable[[int], tuple[list[float], float]]


def _sibling(name: str):
    """The module benchmarks/NAME.py (benchmarks/ put on sys.path, as ``jaxparadigm bench`` does
    not)."""
    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))
    return importlib.import_module(name)


def parse_counts(text: str) -> list[int]:
    """``"1,2"`` / ``"1,auto"`` -> device counts (as ``jaxparadigm run --cpu-devices``), unique."""
    from jaxparadigm.app.cpu_devices import parse_cpu_devices

    counts = [parse_cpu_devices(part, "--cpu-devices") for part in text.split(",")]
    return list(dict.fromkeys(counts))


class Worker:
    """A worker process; ``names`` are the runners it announced once warmed up."""

    def __init__(self, spec: dict, env: dict):
        env = {**env, "PYTHONPATH": os.pathsep.join([str(HERE.parent), env.get("PYTHONPATH", "")])}
        argv = [sys.executable, str(Path(__file__).resolve()), "--worker", json.dumps(spec)]
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
        )
        self.spec = spec
        self.names: list[str] = self._read()["ready"]

    def _read(self) -> dict:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith(PROTOCOL):
                return json.loads(line[len(PROTOCOL) :])
            sys.stdout.write(line)  # the worker's own lines (e.g. "torch: not installed")
        raise RuntimeError(f"bench worker {self.spec} ended with status {self.proc.wait()}")

    def run(self, name: str, n: int) -> dict:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"run": name, "n": n}) + "\n")
        self.proc.stdin.flush()
        return self._read()

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def serve(runners: dict[str, Runner], warmup: int) -> None:
    """The worker side: warm every runner up, announce them, answer requests until stdin ends."""
    for run in runners.values():
        run(warmup)
    print(PROTOCOL + json.dumps({"ready": list(runners)}), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        seconds, check = runners[request["run"]](request["n"])
        print(PROTOCOL + json.dumps({"seconds": seconds, "check": check}), flush=True)


def alternate(workers: list[Worker], rounds: int, n: int) -> dict[str, dict[str, list[float]]]:
    """``{runner: {"seconds": all timed calls, "checks": one per round}}`` over ``rounds`` rounds;
    round ``r`` starts at runner ``r`` of the list (a rotation), ``SETTLE_S`` between requests."""
    pairs = [(w, name) for w in workers for name in w.names]
    out: dict[str, dict[str, list[float]]] = {
        name: {"seconds": [], "checks": []} for _, name in pairs
    }
    for r in range(rounds):
        for w, name in pairs[r % len(pairs) :] + pairs[: r % len(pairs)]:
            time.sleep(SETTLE_S)
            reply = w.run(name, n)
            out[name]["seconds"] += reply["seconds"]
            out[name]["checks"].append(reply["check"])
    return out


def _start(specs: list[dict]) -> list[Worker]:
    """One worker per spec (one at a time: their compiles do not overlap)."""
    from jaxparadigm.app.cpu_devices import with_cpu_devices

    workers = []
    for spec in specs:
        env = dict(os.environ)
        if spec["side"] == "ours":
            env = with_cpu_devices(env, spec["devices"])
            env["XLA_FLAGS"] = " ".join([env["XLA_FLAGS"], *spec["flags"]])
        workers.append(Worker(spec, env))
    return workers


def _specs(counts: list[int], xla_flags: str | None, torch: bool, **common) -> list[dict]:
    specs = [{"side": "ours", "devices": k, "flags": [], **common} for k in counts]
    if xla_flags:
        specs += [
            {"side": "ours", "devices": k, "flags": xla_flags.split(), **common} for k in counts
        ]
    return specs + ([{"side": "torch", "devices": 0, "flags": [], **common}] if torch else [])


def _label(spec: dict, what: str) -> str:
    if spec["side"] == "torch":
        return f"torch {what}"
    k = spec["devices"]
    return f"ours {what} @{k} device{'s' if k > 1 else ''}" + (
        " +xla-flags" if spec["flags"] else ""
    )


def _rel_diff(checks: list[float], ref: list[float]) -> float:
    return max(abs(a - b) / max(abs(b), 1e-30) for a, b in zip(checks, ref, strict=True))


def _header(bench: str, counts: list[int], args) -> dict:
    cpu_info = _sibling("index_bench").cpu_info
    return {
        "bench": bench,
        "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "cpu": cpu_info(),
        "machine": platform.machine(),
        "cpu_devices": counts,
        "xla_flags_variant": args.xla_flags,
        "load_average_1min_at_start": os.getloadavg()[0],
    }


# --- train (charlm) ----------------------------------------------------------------------------


def train_runners(spec: dict) -> dict[str, Runner]:
    """charlm: ours in the data layout over this process's devices (one: mode none), or torch."""
    from jaxparadigm.config import load_config
    from jaxparadigm.train.data import build_dataset

    train_bench = _sibling("train_bench")

    cfg = load_config(train_bench.CONFIG)
    dataset = build_dataset(cfg.data)
    batches = [dataset.batch(i) for i in range(16)]
    if spec["side"] == "torch":
        step = train_bench._torch_runner(cfg, batches)
        if step is None:
            return {}
    else:
        mode = "data" if spec["devices"] > 1 else "none"
        step = train_bench._sharded_runner(cfg, dataset, mode, batches)[0]

    def run(n: int) -> tuple[list[float], float]:
        t0 = time.perf_counter()
        loss = step(n)
        return [time.perf_counter() - t0], loss

    return {_label(spec, "eager charlm step" if spec["side"] == "torch" else "charlm step"): run}


def train_rounds(args) -> dict:
    """``train_bench.py --cpu-devices K,...``: steps/s of ours@K and torch eager, interleaved."""
    from jaxparadigm.config import load_config

    train_bench = _sibling("train_bench")
    counts = parse_counts(args.cpu_devices)
    specs = _specs(counts, args.xla_flags, not args.no_torch, bench="train")
    workers = _start(specs)
    try:
        got = alternate(workers, args.rounds, args.steps)
    finally:
        for w in workers:
            w.close()
    cfg = load_config(train_bench.CONFIG)
    tokens = cfg.data.batch_size * cfg.data.seq_len
    rate = {k: statistics.median(args.steps / s for s in v["seconds"]) for k, v in got.items()}
    result = {
        **_header("train", counts, args),
        "rounds": args.rounds,
        "steps_per_round": args.steps,
        "tokens_per_step": tokens,
        "steps_per_s": rate,
    }
    ours = [k for k in rate if k.startswith("ours")]
    torch = next((k for k in rate if k.startswith("torch")), None)
    if torch:
        result["ratio ours/torch (speed)"] = {k: rate[k] / rate[torch] for k in ours}
    result["max_relative_loss_difference_vs_first"] = {
        k: _rel_diff(got[k]["checks"], got[ours[0]]["checks"]) for k in ours[1:]
    }
    print(
        f"charlm step, each variant in its own process ({result['cpu']}; load "
        f"{result['load_average_1min_at_start']:.1f}; medians of {args.rounds} rounds of "
        f"{args.steps} steps)"
    )
    for k, v in rate.items():
        line = f"  {k:34s} {v:8.2f} steps/s {v * tokens:10.0f} tok/s"
        if torch and k in ours:
            line += f"  {v / rate[torch]:5.2f}x torch"
        print(line)
    for k, v in result["max_relative_loss_difference_vs_first"].items():
        print(f"  loss after each round, {k} vs {ours[0]}: max relative difference {v:.2e}")
    return result


# --- optim (Adam) --------------------------------------------------------------------------------


def optim_runners(spec: dict) -> dict[str, Runner]:
    """Adam + triad over this process's devices (ours), or torch's fused Adam and triad."""
    optim_bench = _sibling("optim_bench")
    sizes, lr = spec["sizes"], 1e-3
    if spec["side"] == "torch":
        torch_runs = optim_bench._torch_runners(sizes, sum(sizes), lr, 1.0)
        return {
            _label(spec, name[len("torch ") :]): _timed(run, lambda: 0.0)
            for name, run in torch_runs.items()
        }
    import jax
    import numpy as np
    from jax.sharding import NamedSharding, PartitionSpec

    from jaxparadigm.optim import adam
    from jaxparadigm.train.sharding import data_mesh, place, tree_shardings

    mesh = data_mesh()
    rng = np.random.default_rng(0)
    host = [rng.standard_normal(n, dtype=np.float32) for n in sizes]
    grads_host = [0.01 * rng.standard_normal(n, dtype=np.float32) for n in sizes]
    shard = tree_shardings(host, mesh, min_size=1)
    tx = adam(lr)
    init = jax.jit(tx.init, out_shardings=tree_shardings(jax.eval_shape(tx.init, host), mesh, 1))
    params = place(host, shard)
    box = {"params": params, "state": init(params), "grads": place(grads_host, shard)}
    step = jax.jit(optim_bench._step_fn(tx), donate_argnums=(0, 1))

    def adam_step() -> None:
        box["params"], box["state"] = step(box["params"], box["state"], box["grads"])
        jax.block_until_ready(box["params"])

    split = NamedSharding(mesh, PartitionSpec("data"))
    n = sum(sizes)
    triad = jax.jit(lambda a, b: a + 1.0000001 * b, donate_argnums=0)
    tri = {
        "a": jax.device_put(np.ones(n, np.float32), split),
        "b": jax.device_put(np.full(n, 0.5, np.float32), split),
    }

    def triad_step() -> None:
        tri["a"] = triad(tri["a"], tri["b"])
        tri["a"].block_until_ready()

    params_sum = lambda: float(sum(np.asarray(p, np.float64).sum() for p in box["params"]))
    return {
        _label(spec, "adam"): _timed(adam_step, params_sum),
        _label(spec, "triad"): _timed(triad_step, lambda: float(tri["a"][0])),
    }


def _timed(call: Callable[[], None], check: Callable[[], float]) -> Runner:
    def run(n: int) -> tuple[list[float], float]:
        seconds = []
        for _ in range(n):
            t0 = time.perf_counter()
            call()
            seconds.append(time.perf_counter() - t0)
        return seconds, check()

    return run


def optim_rounds(args) -> dict:
    """``optim_bench.py --cpu-devices K,...``: Adam and triad of ours@K and torch, interleaved."""
    optim_bench = _sibling("optim_bench")
    counts = parse_counts(args.cpu_devices)
    unit = math.lcm(*counts)
    sizes = [max(unit, s - s % unit) for s in optim_bench._leaf_sizes(args.params, args.leaves)]
    n = sum(sizes)
    workers = _start(_specs(counts, args.xla_flags, not args.no_torch, bench="optim", sizes=sizes))
    try:
        got = alternate(workers, args.reps, 3)
    finally:
        for w in workers:
            w.close()
    med = {k: statistics.median(v["seconds"]) for k, v in got.items()}
    per = lambda k: 12 if k.split(" @")[0].endswith("triad") else optim_bench.BYTES_PER_PARAM
    result = {
        **_header("optim", counts, args),
        "params": n,
        "leaves": len(sizes),
        "rounds": args.reps,
        "steps_per_round": 3,
        "median_ms": {k: 1e3 * v for k, v in med.items()},
        "GBps": {k: n * per(k) / v / 1e9 for k, v in med.items()},
    }
    ours = [k for k in med if k.startswith("ours") and " adam" in k]
    if "torch fused adam" in med:
        result["ratio ours/torch fused adam (time)"] = {
            k: med[k] / med["torch fused adam"] for k in ours
        }
    result["max_relative_params_sum_difference_vs_first"] = {
        k: _rel_diff(got[k]["checks"], got[ours[0]]["checks"]) for k in ours[1:]
    }
    print(
        f"Adam, {n:,} float32 params in {len(sizes)} leaves, each variant in its own process "
        f"({result['cpu']}; load {result['load_average_1min_at_start']:.1f}; medians of "
        f"{args.reps} rounds x 3 steps)"
    )
    for k, v in med.items():
        line = f"  {k:40s} {1e3 * v:8.2f} ms {result['GBps'][k]:7.1f} GB/s"
        if k in ours and "torch fused adam" in med:
            line += f"  {v / med['torch fused adam']:5.2f}x torch fused (time)"
        print(line)
    for k, v in result["max_relative_params_sum_difference_vs_first"].items():
        print(f"  params' sum after each round, {k} vs {ours[0]}: max relative difference {v:.2e}")
    return result


if __name__ == "__main__":
    if sys.argv[1:2] != ["--worker"] or len(sys.argv) != 3:
        raise SystemExit("internal: run through train_bench.py / optim_bench.py --cpu-devices")
    worker_spec = json.loads(sys.argv[2])
    builders = {"train": train_runners, "optim": optim_runners}
    serve(builders[worker_spec["bench"]](worker_spec), warmup=3)
