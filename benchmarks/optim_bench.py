"""Optimiser step benchmark (C4.2, C4.4): jaxparadigm.optim vs optax (and torch when installed).

10M float32 parameters in 50 leaves. Each variant is one jitted step ``(params, state, grads) ->
(params, state)`` with params and state donated, timed after a warm-up, interleaved in one process
(order shuffled every round) so machine load hits every variant alike; we report medians and
minima, ratios to the matching reference and effective bandwidth (7 float32 reads/writes per
parameter per step: read p, g, m, v; write p, m, v = 28 bytes/param).

Usage: python benchmarks/optim_bench.py [--params N] [--leaves L] [--reps R] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import time
from collections.abc import Callable

import jax
import jax.numpy as jnp
import optax

from jaxparadigm.config import ClipConfig, OptimConfig, ScheduleConfig
from jaxparadigm.optim import adam, chain_for

BYTES_PER_PARAM = 7 * 4


def _leaf_sizes(total: int, leaves: int) -> list[int]:
    base = total // leaves
    return [base + (1 if i < total - base * leaves else 0) for i in range(leaves)]


def _jax_runner(
    tx: optax.GradientTransformation, sizes: list[int], seed: int
) -> Callable[[], None]:
    keys = jax.random.split(jax.random.key(seed), 2 * len(sizes))
    params = [
        jax.random.normal(k, (n,), jnp.float32) for k, n in zip(keys[::2], sizes, strict=True)
    ]
    grads = [
        0.01 * jax.random.normal(k, (n,), jnp.float32)
        for k, n in zip(keys[1::2], sizes, strict=True)
    ]

    def step(params, state, grads):
        updates, state = tx.update(grads, state, params)
        return optax.apply_updates(params, updates), state

    step = jax.jit(step, donate_argnums=(0, 1))
    box = {"params": params, "state": tx.init(params)}

    def run() -> None:
        box["params"], box["state"] = step(box["params"], box["state"], grads)
        jax.block_until_ready(box["params"])

    return run


def _program_text(tx: optax.GradientTransformation, leaves: int) -> str:
    """Compiled HLO of the donated step on small leaves, with source metadata stripped."""
    params = [jnp.ones((128,), jnp.float32) for _ in range(leaves)]

    def step(params, state, grads):
        updates, state = tx.update(grads, state, params)
        return optax.apply_updates(params, updates), state

    text = jax.jit(step, donate_argnums=(0, 1)).lower(params, tx.init(params), params)
    text = text.compile().as_text()
    return re.sub(r", metadata=\{[^}]*\}", "", text[text.index("%") :])


def _torch_runners(sizes: list[int], lr: float, max_norm: float) -> dict[str, Callable[[], None]]:
    try:
        import torch
    except ImportError:
        return {}
    torch.manual_seed(0)
    runners = {}
    for name, clip in (("torch fused adam", False), ("torch clip + fused adam", True)):
        params = [torch.nn.Parameter(torch.randn(n)) for n in sizes]
        for p in params:
            p.grad = 0.01 * torch.randn(p.shape)
        opt = torch.optim.Adam(params, lr=lr, fused=True)

        def run(opt=opt, params=params, clip=clip) -> None:
            if clip:
                torch.nn.utils.clip_grad_norm_(params, max_norm, foreach=True)
            opt.step()

        runners[name] = run
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


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--params", type=int, default=10_000_000)
    parser.add_argument("--leaves", type=int, default=50)
    parser.add_argument("--reps", type=int, default=25)
    parser.add_argument("--no-torch", action="store_true")
    parser.add_argument("--json", default=None, help="also write the results here")
    args = parser.parse_args(argv)
    if args.params < args.leaves or args.leaves < 1 or args.reps < 1:
        parser.error("need --leaves >= 1, --params >= --leaves, --reps >= 1")

    sizes = _leaf_sizes(args.params, args.leaves)
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
    runners = {
        "ours adam": _jax_runner(adam(lr), sizes, 0),
        "optax adam": _jax_runner(optax.adam(lr), sizes, 0),
        "ours chain (clip+schedule+adam)": _jax_runner(chain_for(cfg), sizes, 0),
        "optax chain (clip+schedule+adam)": _jax_runner(optax_chain, sizes, 0),
    }
    if not args.no_torch:
        runners.update(_torch_runners(sizes, lr, max_norm))

    # Same op sequence => XLA should emit the same program; if so, any timing gap between the
    # two is measurement noise on a shared machine, not a property of the code.
    identical = _program_text(adam(lr), args.leaves) == _program_text(optax.adam(lr), args.leaves)
    times = measure(runners, args.reps)
    med = {name: statistics.median(ts) for name, ts in times.items()}
    gbps = {name: args.params * BYTES_PER_PARAM / m / 1e9 for name, m in med.items()}
    pairs = [
        ("ours adam", "optax adam"),
        ("ours chain (clip+schedule+adam)", "optax chain (clip+schedule+adam)"),
        ("ours adam", "torch fused adam"),
        ("ours chain (clip+schedule+adam)", "torch clip + fused adam"),
    ]
    pairs = [(a, b) for a, b in pairs if a in med and b in med]
    ratios = {f"{a} / {b}": med[a] / med[b] for a, b in pairs}
    ratios_of_min = {f"{a} / {b}": min(times[a]) / min(times[b]) for a, b in pairs}
    result = {
        "params": args.params,
        "leaves": args.leaves,
        "reps": args.reps,
        "backend": jax.default_backend(),
        "devices": len(jax.devices()),
        "median_ms": {k: 1e3 * v for k, v in med.items()},
        "min_ms": {k: 1e3 * min(v) for k, v in times.items()},
        "effective_GBps": gbps,
        "ratios": ratios,
        "ratios_of_min": ratios_of_min,
        "ours_adam_program_identical_to_optax": identical,
    }
    print(f"{args.params:,} float32 params in {args.leaves} leaves, {args.reps} interleaved reps")
    print(f"{'variant':40s} {'median ms':>10s} {'min ms':>8s} {'GB/s':>7s}")
    for name in runners:
        print(
            f"{name:40s} {result['median_ms'][name]:10.2f} {result['min_ms'][name]:8.2f} "
            f"{gbps[name]:7.2f}"
        )
    print(f"{'ratio':66s} {'medians':>8s} {'minima':>8s}")
    for name, value in ratios.items():
        print(f"{name:66s} {value:7.3f}x {ratios_of_min[name]:7.3f}x")
    print(f"ours adam compiles to the same XLA program as optax adam: {identical}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(result, fh, indent=2)
    return result


if __name__ == "__main__":
    main()
