"""Adam at the memory-bandwidth limit (C4.2, C4.4): jaxparadigm.optim vs optax vs torch fused Adam.

One process, interleaved: a STREAM-style triad (jitted ``a + s*b`` over ``--params`` float32, the
output donated into ``a`` like STREAM's preallocated array: 12 bytes/element) measures the
machine's practical bandwidth; then every Adam variant is one jitted step ``(params, state,
grads) -> (params, state)`` with params and state donated, timed in shuffled rounds (so load hits
every variant alike). Reported per variant: median and minimum time, effective GB/s at 28
bytes/param (read p, g, m, v; write p, m, v) and its fraction of the triad, and, for JAX, XLA's
own accounting of the compiled program (``cost_analysis`` bytes accessed per param and the loop
fusion count): the evidence of how many passes XLA:CPU makes over the parameters.

Variants: our ``adam`` and ``optax.adam`` on ``--leaves`` leaves; our ``adam`` and our chain
through ``jaxparadigm.optim.update_step`` (the library's compiled step: on XLA:CPU each leaf's
loops back to back, so ``p'`` re-reads ``m'``/``v'`` from cache; before -> after: the ratio
``ours adam (update_step) / ours adam``); our ``adam`` on the same
parameters held as one flat buffer by the caller, and inside ``optax.flatten`` (which
concatenates the leaves every step); our ``chain_for`` (clip + warmup-cosine + adam) and optax's
equivalent; ``torch.optim.Adam(fused=True)`` and torch's ``clip_grad_norm_`` + fused Adam.

``--cpu-devices 1,2`` (issue 26) instead runs our ``adam`` with the parameters split over K CPU
devices for each K, and torch's fused Adam, each in its own process, in interleaved rounds
(benchmarks/cpu_devices_rounds.py).

Usage: python benchmarks/optim_bench.py [--params N] [--leaves L] [--reps R] [--runs K]
       [--short] [--no-torch] [--json PATH]     (or: jaxparadigm bench optim ...)
       python benchmarks/optim_bench.py --cpu-devices 1,2 [--xla-flags FLAGS] [--params N] ...
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import jax
import jax.numpy as jnp
import optax

from jaxparadigm.config import ClipConfig, OptimConfig, ScheduleConfig
from jaxparadigm.optim import adam, chain_for, update_step

sys.path.insert(0, str(Path(__file__).resolve().parent))  # for ``jaxparadigm bench``
from index_bench import cpu_info  # noqa: E402

BYTES_PER_PARAM = 7 * 4  # read p, g, m, v; write p, m, v (float32)
TRIAD_BYTES = 3 * 4  # read a, b; write a


def _leaf_sizes(total: int, leaves: int) -> list[int]:
    base = total // leaves
    return [base + (1 if i < total - base * leaves else 0) for i in range(leaves)]


def _step_fn(tx: optax.GradientTransformation):
    def step(params, state, grads):
        updates, state = tx.update(grads, state, params)
        return optax.apply_updates(params, updates), state

    return step


def _xla_evidence(compiled) -> dict:
    """Loop fusions in the entry computation and XLA's bytes accessed per step."""
    text = compiled.as_text()
    entry = text[text.index("\nENTRY") :]
    cost = compiled.cost_analysis()
    cost = cost[0] if isinstance(cost, list) else cost
    return {
        "loop_fusions": len(re.findall(r"kind=kLoop", entry)),
        "bytes_accessed": float(cost.get("bytes accessed", float("nan"))),
    }


def _jax_runner(
    tx, sizes: list[int], seed: int, fused: bool = False
) -> tuple[Callable[[], None], dict]:
    """A runner of one donated step (``fused``: ``jaxparadigm.optim.update_step``, the library's
    compiled step; else ``jax.jit`` of update + apply_updates by hand) and its XLA evidence."""
    keys = jax.random.split(jax.random.key(seed), 2 * len(sizes))
    params = [
        jax.random.normal(k, (n,), jnp.float32) for k, n in zip(keys[::2], sizes, strict=True)
    ]
    grads = [
        0.01 * jax.random.normal(k, (n,), jnp.float32)
        for k, n in zip(keys[1::2], sizes, strict=True)
    ]
    state = tx.init(params)
    step = update_step(tx) if fused else jax.jit(_step_fn(tx), donate_argnums=(0, 1))
    evidence = _xla_evidence(step.lower(params, state, grads).compile())
    box = {"params": params, "state": state}

    def run() -> None:
        box["params"], box["state"] = step(box["params"], box["state"], grads)
        jax.block_until_ready(box["params"])

    return run, evidence


def _triad_runner(n: int) -> tuple[Callable[[], None], dict]:
    """STREAM triad ``a <- a + s * b`` with ``a`` donated (written in place, 12 bytes/element)."""
    b = jnp.full((n,), 0.5, jnp.float32)
    triad = jax.jit(lambda a, b: a + 1.0000001 * b, donate_argnums=0)
    box = {"a": jnp.ones((n,), jnp.float32)}
    evidence = _xla_evidence(triad.lower(box["a"], b).compile())

    def run() -> None:
        box["a"] = triad(box["a"], b)
        box["a"].block_until_ready()

    return run, evidence


def _program_text(tx: optax.GradientTransformation, leaves: int) -> str:
    """Compiled HLO of the donated step on small leaves, with source metadata stripped."""
    params = [jnp.ones((128,), jnp.float32) for _ in range(leaves)]
    lowered = jax.jit(_step_fn(tx), donate_argnums=(0, 1)).lower(params, tx.init(params), params)
    text = lowered.compile().as_text()
    return re.sub(r", metadata=\{[^}]*\}", "", text[text.index("%") :])


def _torch_runners(
    sizes: list[int], n: int, lr: float, max_norm: float
) -> dict[str, Callable[[], None]]:
    try:
        import torch
    except ImportError:
        return {}
    torch.manual_seed(0)
    runners = {}
    for name, clip in (("torch fused adam", False), ("torch clip + fused adam", True)):
        params = [torch.nn.Parameter(torch.randn(k)) for k in sizes]
        for p in params:
            p.grad = 0.01 * torch.randn(p.shape)
        opt = torch.optim.Adam(params, lr=lr, fused=True)

        def run(opt=opt, params=params, clip=clip) -> None:
            if clip:
                torch.nn.utils.clip_grad_norm_(params, max_norm, foreach=True)
            opt.step()

        runners[name] = run
    a, b = torch.ones(n), torch.full((n,), 0.5)
    runners["torch triad"] = lambda: torch.add(a, b, alpha=1.0000001, out=a)
    return runners


def measure(
    runners: dict[str, Callable[[], None]], reps: int, warmup: int = 2, seed: int = 0
) -> dict[str, list[float]]:
    """Interleaved timing: rep i runs every variant once, in a freshly shuffled order.

    Shuffling (not a fixed rotation) matters: torch's OpenMP threads keep spinning for a while
    after an op, so in a fixed cycle the variant that always follows torch pays for it.
    """
    for run in runners.values():
        for _ in range(warmup):
            run()
    times: dict[str, list[float]] = {name: [] for name in runners}
    names = list(runners)
    rng = random.Random(seed)
    for _ in range(reps):
        rng.shuffle(names)
        for name in names:
            t0 = time.perf_counter()
            runners[name]()
            times[name].append(time.perf_counter() - t0)
    return times


def _summarise(times: dict[str, list[float]], evidence: dict, n: int) -> dict:
    med = {k: statistics.median(v) for k, v in times.items()}
    triad_gbps = n * TRIAD_BYTES / med["triad"] / 1e9
    rows = {}
    for name, m in med.items():
        row = {"median_ms": 1e3 * m, "min_ms": 1e3 * min(times[name])}
        if name not in ("triad", "torch triad"):
            gbps = n * BYTES_PER_PARAM / m / 1e9
            row.update(effective_GBps=gbps, fraction_of_triad=gbps / triad_gbps)
        if name in evidence:
            per_param = evidence[name]["bytes_accessed"] / n
            row.update(
                xla_bytes_per_param=per_param,
                xla_achieved_GBps=n * per_param / m / 1e9,
                loop_fusions=evidence[name]["loop_fusions"],
            )
        rows[name] = row
    pairs = [
        ("ours adam (update_step)", "ours adam"),
        ("ours chain (update_step)", "ours chain (clip+schedule+adam)"),
        ("ours adam (update_step)", "torch fused adam"),
        ("ours chain (update_step)", "torch clip + fused adam"),
        ("ours adam", "optax adam"),
        ("ours adam (flat buffer)", "ours adam"),
        ("optax.flatten(ours adam)", "ours adam"),
        ("ours chain (clip+schedule+adam)", "optax chain (clip+schedule+adam)"),
        ("ours adam", "torch fused adam"),
        ("ours adam (flat buffer)", "torch fused adam"),
        ("ours chain (clip+schedule+adam)", "torch clip + fused adam"),
    ]
    ratios = {f"{a} / {b}": med[a] / med[b] for a, b in pairs if a in med and b in med}
    return {"triad_GBps": triad_gbps, "variants": rows, "ratios": ratios}


def _print_run(index: int, summary: dict) -> None:
    print(f"run {index}: triad {summary['triad_GBps']:.1f} GB/s (12 B/element, donated output)")
    head = f"{'variant':34s} {'median ms':>9s} {'min ms':>7s} {'GB/s@28B':>8s} {'of triad':>8s}"
    print(head + f" {'XLA B/param':>11s} {'XLA GB/s':>8s} {'fusions':>7s}")
    for name, row in summary["variants"].items():
        line = f"{name:34s} {row['median_ms']:9.2f} {row['min_ms']:7.2f}"
        if "effective_GBps" in row:
            line += f" {row['effective_GBps']:8.1f} {row['fraction_of_triad']:8.2f}"
        else:
            line += f" {'':8s} {'':8s}"
        if "xla_bytes_per_param" in row:
            line += (
                f" {row['xla_bytes_per_param']:11.1f} {row['xla_achieved_GBps']:8.1f}"
                f" {row['loop_fusions']:7d}"
            )
        print(line)
    for name, value in summary["ratios"].items():
        print(f"  {name:70s} {value:6.3f}x")


def _torch_available() -> bool:
    """Whether the optional PyTorch oracle can be used; says so in one line when it cannot."""
    if os.environ.get("JAXPARADIGM_NO_TORCH"):
        print("torch: skipped (JAXPARADIGM_NO_TORCH is set); its rows are left out")
        return False
    try:
        import torch  # noqa: F401
    except ImportError:
        print("torch: not installed, its rows are left out (pip install -e '.[crosscheck]')")
        return False
    return True


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--params", type=int, default=1_000_000)
    parser.add_argument("--leaves", type=int, default=10)
    parser.add_argument("--reps", type=int, default=7, help="shuffled rounds per run")
    parser.add_argument("--runs", type=int, default=1, help="measurement runs in this process")
    parser.add_argument("--short", action="store_true", help="1M params, 10 leaves, 7 rounds")
    parser.add_argument(
        "--full", action="store_true", help="RESULTS.md's size: 10M params, 50 leaves, 25 rounds"
    )
    parser.add_argument("--no-torch", action="store_true")
    parser.add_argument("--json", default=None, help="also write the results here")
    parser.add_argument(
        "--cpu-devices",
        metavar="K,...",
        help="our adam (and a triad) on K CPU devices for each K, e.g. 1,2 or 1,auto, vs torch "
        "fused Adam: each in its own process, interleaved rounds (benchmarks/cpu_devices_rounds.py)",
    )
    parser.add_argument(
        "--xla-flags",
        metavar="FLAGS",
        help="with --cpu-devices: also each K with these XLA flags (write --xla-flags='--a=1 --b')",
    )
    args = parser.parse_args(argv)
    if args.full:
        parser.set_defaults(params=10_000_000, leaves=50, reps=25)
        args = parser.parse_args(argv)
    if args.short:
        args.params, args.leaves, args.reps = 1_000_000, 10, 7
    args.no_torch = args.no_torch or not _torch_available()
    print(
        f"bench optim: {'full' if args.full else 'quick'} size ({args.params:,} params in "
        f"{args.leaves} leaves, {args.reps} rounds); the full size of benchmarks/RESULTS.md: "
        "`jaxparadigm bench optim --full` (10M params: several minutes on 2 cores, about 2 GB)",
        flush=True,
    )
    if args.params < args.leaves or args.leaves < 1 or args.reps < 1 or args.runs < 1:
        parser.error("need --leaves >= 1, --params >= --leaves, --reps >= 1, --runs >= 1")
    if args.cpu_devices:
        sys.path.insert(0, str(Path(__file__).resolve().parent))  # for ``jaxparadigm bench``
        from cpu_devices_rounds import optim_rounds

        result = optim_rounds(args)
        if args.json:
            Path(args.json).write_text(json.dumps(result, indent=2))
        return result

    load_start = os.getloadavg()
    n, sizes = args.params, _leaf_sizes(args.params, args.leaves)
    lr, max_norm, warmup, decay = 1e-3, 1.0, 100, 10_000
    cfg = OptimConfig(
        name="adam",
        learning_rate=lr,
        clip=ClipConfig(style="global", max_norm=max_norm),
        schedule=ScheduleConfig(name="warmup_cosine_decay", warmup_steps=warmup, decay_steps=decay),
    )
    optax_chain = optax.chain(
        optax.clip_by_global_norm(max_norm),
        optax.adam(optax.warmup_cosine_decay_schedule(0.0, lr, warmup, decay)),
    )
    jax_variants = {
        "ours adam": (adam(lr), sizes, False),
        "ours adam (update_step)": (adam(lr), sizes, True),
        "optax adam": (optax.adam(lr), sizes, False),
        "ours adam (flat buffer)": (adam(lr), [n], False),
        "optax.flatten(ours adam)": (optax.flatten(adam(lr)), sizes, False),
        "ours chain (clip+schedule+adam)": (chain_for(cfg), sizes, False),
        "ours chain (update_step)": (chain_for(cfg), sizes, True),
        "optax chain (clip+schedule+adam)": (optax_chain, sizes, False),
    }
    runners, evidence = {}, {}
    runners["triad"], evidence["triad"] = _triad_runner(n)
    for name, (tx, leaf_sizes, fused) in jax_variants.items():
        runners[name], evidence[name] = _jax_runner(tx, leaf_sizes, 0, fused)
    if not args.no_torch:
        runners.update(_torch_runners(sizes, n, lr, max_norm))

    # Same op sequence => XLA should emit the same program; if so, any timing gap between the
    # two is measurement noise on a shared machine, not a property of the code.
    identical = _program_text(adam(lr), 3) == _program_text(optax.adam(lr), 3)
    summaries = []
    for index in range(1, args.runs + 1):
        summaries.append(_summarise(measure(runners, args.reps, seed=index), evidence, n))
    load_end = os.getloadavg()

    torch_threads = None
    if not args.no_torch:
        import torch

        torch_threads = torch.get_num_threads()
    result = {
        "params": n,
        "leaves": args.leaves,
        "reps": args.reps,
        "runs": summaries,
        "backend": jax.default_backend(),
        "jax": jax.__version__,
        "machine": cpu_info(),
        "cpu_count": os.cpu_count(),
        "torch_threads": torch_threads,
        "xla_flags": os.environ.get("XLA_FLAGS", ""),
        "load_average_start": load_start,
        "load_average_end": load_end,
        "ours_adam_program_identical_to_optax": identical,
    }
    print(
        f"{n:,} float32 params in {args.leaves} leaves, {args.reps} shuffled rounds x "
        f"{args.runs} run(s); jax {jax.__version__} on {jax.default_backend()}, "
        f"{os.cpu_count()} CPUs, torch threads {torch_threads}, XLA_FLAGS={result['xla_flags']!r}"
    )
    print(f"CPU: {result['machine']}")
    print(f"1-min load average: {load_start[0]:.2f} at start, {load_end[0]:.2f} at end")
    for index, summary in enumerate(summaries, start=1):
        _print_run(index, summary)
    print(f"ours adam compiles to the same XLA program as optax adam: {identical}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(result, fh, indent=2)
    return result


if __name__ == "__main__":
    main()
