"""Autodiff benchmark: our graph + VJP registry vs jax's own AD, and the tape vs jax eager.

1. 20-layer tanh MLP (width 256, batch 64): ``jax.jit(grad(loss))`` (ours) vs
   ``jax.jit(jax.grad(loss))``: runtime ratio (goal <= 1.05) and compile-time ratio (trace + lower +
   compile, fresh function objects each round).
2. Tape eager per-op overhead: a chain of recorded ops on ``Var`` vs the same ``jnp`` ops eagerly
   (goal <= 2x), plus the tape's backward per op.
3. ``func.hessian`` / ``func.hvp`` (reverse part through our engine) vs ``jax.hessian`` /
   ``jax.jvp(jax.grad)`` at n = 256 and 1024 on f(x) = sum(tanh(A x)) + 0.5 |x|^2.

All timings are interleaved rounds (ours, reference, ours, ...) and medians. Prints a Markdown
section for benchmarks/RESULTS.md (``--append`` appends it).

``--train-step`` runs only the training-step section (issue #12, section 4): the jitted step of
``configs/mlp_spirals.yaml`` and ``configs/charlm_pydoc.yaml`` with ``train.grad: jaxparadigm``
(our value_and_grad) vs ``train.grad: jax`` (goal <= 1.05).

``--jacobian-memory`` runs only the Jacobian-memory section (issue #12, section 5): the compiled
``memory_analysis()`` of ``func.hvp`` vs ``func.hessian`` vs ``func.hessian(chunk_size=c)`` (and
``jax.hessian``) on f(x) = sum(tanh(W x)^2) + |x|^2 / 2, W of shape (4n, n), for each n.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from jaxparadigm.autodiff import func, grad
from jaxparadigm.autodiff.tape import Var


def _mlp_case(depth: int, width: int, batch: int):
    rng = np.random.default_rng(0)
    params = [
        (
            jnp.asarray(rng.standard_normal((width, width)) / np.sqrt(width), jnp.float32),
            jnp.asarray(0.01 * rng.standard_normal(width), jnp.float32),
        )
        for _ in range(depth)
    ]
    x = jnp.asarray(rng.standard_normal((batch, width)), jnp.float32)

    def loss(params, x):
        h = x
        for w, b in params:
            h = jnp.tanh(h @ w + b)
        return jnp.mean(h**2)

    return loss, params, x


def _interleaved(fns: dict, args, rounds: int) -> dict:
    """Median seconds per call of each fn, measured in interleaved rounds (after a warm-up)."""
    for fn in fns.values():
        jax.block_until_ready(fn(*args))
    times: dict = {k: [] for k in fns}
    for _ in range(rounds):
        for k, fn in fns.items():
            t = time.perf_counter()
            jax.block_until_ready(fn(*args))
            times[k].append(time.perf_counter() - t)
    return {k: statistics.median(v) for k, v in times.items()}


def bench_mlp(depth: int, width: int, batch: int, rounds: int, compile_rounds: int) -> dict:
    loss, params, x = _mlp_case(depth, width, batch)
    ours, ref = jax.jit(grad(loss)), jax.jit(jax.grad(loss))
    g1, g2 = ours(params, x), ref(params, x)
    err = max(
        float(jnp.max(jnp.abs(a - b)) / jnp.max(jnp.abs(b)))
        for a, b in zip(jax.tree_util.tree_leaves(g1), jax.tree_util.tree_leaves(g2), strict=True)
    )
    run = _interleaved({"ours": ours, "jax": ref}, (params, x), rounds)
    compile_times: dict = {"ours": [], "jax": []}
    for _ in range(compile_rounds):
        for name, make in (("ours", grad), ("jax", jax.grad)):
            fn = jax.jit(make(lambda p, x: loss(p, x)))  # fresh object: no trace cache hit
            t = time.perf_counter()
            fn.lower(params, x).compile()
            compile_times[name].append(time.perf_counter() - t)
    comp = {k: statistics.median(v) for k, v in compile_times.items()}
    n_ours = len(jax.make_jaxpr(grad(loss))(params, x).jaxpr.eqns)
    n_jax = len(jax.make_jaxpr(jax.grad(loss))(params, x).jaxpr.eqns)
    return {"run": run, "compile": comp, "err": err, "eqns": (n_ours, n_jax)}


def bench_tape(n_ops: int, size: int, rounds: int) -> dict:
    """Per-op seconds: tape forward (recording), jax eager forward, tape backward."""
    x0 = jnp.linspace(-1.0, 1.0, size, dtype=jnp.float32)
    c = jnp.float32(0.999)

    def chain_tape(x):
        for _ in range(n_ops // 2):
            x = (x * c).tanh()
        return x

    def chain_jnp(x):
        for _ in range(n_ops // 2):
            x = jnp.tanh(x * c)
        return x

    jax.block_until_ready(chain_jnp(x0))
    chain_tape(Var(x0, requires_grad=True)).sum().backward()
    fwd_tape, fwd_jnp, bwd_tape = [], [], []
    for _ in range(rounds):
        t = time.perf_counter()
        y = chain_tape(Var(x0, requires_grad=True))
        jax.block_until_ready(y.value)
        fwd_tape.append(time.perf_counter() - t)
        t = time.perf_counter()
        jax.block_until_ready(chain_jnp(x0))
        fwd_jnp.append(time.perf_counter() - t)
        s = y.sum()
        t = time.perf_counter()
        s.backward()
        bwd_tape.append(time.perf_counter() - t)
    per = lambda v: statistics.median(v) / n_ops
    return {"tape": per(fwd_tape), "jax": per(fwd_jnp), "tape_bwd": per(bwd_tape)}


def bench_second_order(n: int, rounds: int) -> dict:
    rng = np.random.default_rng(n)
    a = jnp.asarray(rng.standard_normal((n, n)) / np.sqrt(n), jnp.float32)
    x = jnp.asarray(rng.standard_normal(n), jnp.float32)
    v = jnp.asarray(rng.standard_normal(n), jnp.float32)
    f = lambda x: jnp.sum(jnp.tanh(a @ x)) + 0.5 * jnp.sum(x * x)
    ours_h, ref_h = jax.jit(func.hessian(f)), jax.jit(jax.hessian(f))
    ours_v = jax.jit(lambda x, v: func.hvp(f, (x,), (v,)))
    ref_v = jax.jit(lambda x, v: jax.jvp(jax.grad(f), (x,), (v,))[1])
    h1, h2 = ours_h(x), ref_h(x)
    err = float(jnp.max(jnp.abs(h1 - h2)) / jnp.max(jnp.abs(h2)))
    hess = _interleaved({"ours": ours_h, "jax": ref_h}, (x,), rounds)
    hvp = _interleaved({"ours": ours_v, "jax": ref_v}, (x, v), rounds * 4)
    return {"hessian": hess, "hvp": hvp, "err": err}


def bench_train_step(config: str, rounds: int, steps_per_round: int) -> dict:
    """Median seconds per jitted, donating train step with each ``train.grad`` engine (interleaved)."""
    from flax import nnx

    from jaxparadigm.build import build_model
    from jaxparadigm.config import load_config
    from jaxparadigm.optim import chain_for, schedule_for
    from jaxparadigm.train.data import build_dataset
    from jaxparadigm.train.objectives import loss_for
    from jaxparadigm.train.train_step import init_train_state, make_train_step

    cfg = load_config(Path(__file__).resolve().parents[1] / "configs" / config)
    dataset = build_dataset(cfg.data)
    graphdef, variables = nnx.split(build_model(cfg.model, dataset, cfg.train.seed))
    params = nnx.to_pure_dict(variables)
    tx = chain_for(cfg.optim)
    batches = [jax.device_put(dataset.batch(i)) for i in range(steps_per_round)]
    engines = ("jaxparadigm", "jax")
    steps, states, flops = {}, {}, {}
    for grad_engine in engines:
        steps[grad_engine] = make_train_step(
            graphdef, loss_for(dataset.kind), tx, lr_fn=schedule_for(cfg.optim), grad=grad_engine
        )
        state = init_train_state(jax.tree_util.tree_map(jnp.array, params), tx, cfg.train.seed)
        cost = steps[grad_engine].lower(state, batches[0]).compile().cost_analysis()
        cost = cost[0] if isinstance(cost, list) else cost
        flops[grad_engine] = (
            float(cost.get("flops", float("nan"))),
            float(cost.get("bytes accessed", float("nan"))),
        )
        state, _ = steps[grad_engine](state, batches[0])  # compile
        states[grad_engine] = jax.block_until_ready(state)
    times: dict = {k: [] for k in engines}
    for _ in range(rounds):
        for k in engines:
            state = states[k]
            t = time.perf_counter()
            for b in batches:
                state, metrics = steps[k](state, b)
            jax.block_until_ready(metrics)
            times[k].append((time.perf_counter() - t) / len(batches))
            states[k] = state
    return {**{k: statistics.median(v) for k, v in times.items()}, "flops": flops}


def train_step_section(rounds: int) -> str:
    """Markdown for RESULTS.md: the jitted train step with each ``train.grad`` engine."""
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "## autodiff: the training step on our engine (`train.grad`)",
        "",
        f"Measured {now} on {jax.devices()[0].platform} ({platform.machine()}, "
        f"{os.cpu_count()} cores, jax {jax.__version__}, 1-min load average {load:.1f} at start). "
        "The jitted, donating train step (guard on) of each shipped config at full size, "
        "`train.grad: jaxparadigm` (our value_and_grad) vs `train.grad: jax`, in one process: "
        f"{rounds} interleaved rounds of 100 (MLP) or 10 (LM) steps each, medians per step; the "
        "compiled FLOPs and bytes accessed (XLA's `cost_analysis()`) do not depend on the "
        "machine's load.",
        "",
        "| config | ours (ms/step) | jax (ms/step) | ratio (goal <= 1.05) | FLOPs ours/jax | "
        "bytes accessed ours/jax |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for config, steps in (("mlp_spirals.yaml", 100), ("charlm_pydoc.yaml", 10)):
        ts = bench_train_step(config, rounds, steps)
        fl = ts["flops"]
        lines.append(
            f"| {config} | {ts['jaxparadigm'] * 1e3:.2f} | {ts['jax'] * 1e3:.2f} | "
            f"{ts['jaxparadigm'] / ts['jax']:.3f}x | {fl['jaxparadigm'][0] / fl['jax'][0]:.4f} | "
            f"{fl['jaxparadigm'][1] / fl['jax'][1]:.4f} |"
        )
    load_end = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    lines += [
        "",
        f"1-min load average at the end: {load_end:.1f}. "
        "Reproduce: `python benchmarks/autodiff_bench.py --train-step`.",
        "",
    ]
    return "\n".join(lines)


def _hessian_memory_variants(chunks):
    """name -> jitted-able fn(x, w, v) for the Jacobian-memory benchmark (fresh closures)."""
    f = lambda x, w: jnp.sum(jnp.tanh(w @ x) ** 2) + 0.5 * jnp.sum(x * x)
    variants = {
        "func.hvp (H v)": lambda x, w, v: func.hvp(lambda y: f(y, w), (x,), (v,)),
        "func.hessian": lambda x, w, v: func.hessian(lambda y: f(y, w))(x),
    }
    for c in chunks:
        variants[f"func.hessian(chunk_size={c})"] = lambda x, w, v, c=c: func.hessian(
            lambda y: f(y, w), chunk_size=c
        )(x)
    variants["jax.hessian"] = lambda x, w, v: jax.hessian(lambda y: f(y, w))(x)
    return variants


def bench_jacobian_memory(n: int, chunks=(16, 128), check: bool = True) -> dict:
    """Compiled memory (MiB) of each variant at size n: temp buffers, arguments, outputs.

    Lowered on ``ShapeDtypeStruct``s, so nothing of size n is allocated to measure it. With
    ``check`` the Hessians are also computed and the chunked ones compared with the full one.
    """
    spec_x = jax.ShapeDtypeStruct((n,), jnp.float32)
    spec_w = jax.ShapeDtypeStruct((4 * n, n), jnp.float32)
    rows, fns = {}, {}
    for name, fn in _hessian_memory_variants(chunks).items():
        fns[name] = jax.jit(fn)
        m = fns[name].lower(spec_x, spec_w, spec_x).compile().memory_analysis()
        mib = lambda b: b / 2**20
        rows[name] = {
            "temp": mib(m.temp_size_in_bytes),
            "args": mib(m.argument_size_in_bytes),
            "out": mib(m.output_size_in_bytes),
        }
    err = None
    if check:
        rng = np.random.default_rng(n)
        x = jnp.asarray(rng.standard_normal(n), jnp.float32)
        w = jnp.asarray(rng.standard_normal((4 * n, n)) / np.sqrt(n), jnp.float32)
        full = fns["func.hessian"](x, w, x)
        err = max(
            float(jnp.max(jnp.abs(fns[k](x, w, x) - full)))
            for k in fns
            if k.startswith("func.hessian(") or k == "jax.hessian"
        )
    return {"rows": rows, "err": err}


def jacobian_memory_section(ns, chunks, check_max_n: int) -> str:
    """Markdown for RESULTS.md: one table per n, figures from ``bench_jacobian_memory``."""
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "## autodiff: Jacobian peak memory (hvp vs Hessian vs chunked Hessian)",
        "",
        f"Measured {now} on {jax.devices()[0].platform} ({platform.machine()}, jax "
        f"{jax.__version__}, 1-min load average {load:.1f}). f(x) = sum(tanh(W x)^2) + |x|^2/2, "
        "W float32 of shape (4n, n); compiled `memory_analysis()` of the jitted function "
        "(temp = XLA's scratch buffers, the part that scales with how many Hessian rows are live; "
        "args = x, W, v; out = the result). `func.hessian` is our jacfwd of our jacrev; "
        "`chunk_size=c` computes c rows at a time (`lax.map` over vmapped chunks).",
        "",
    ]
    for n in ns:
        res = bench_jacobian_memory(n, chunks, check=n <= check_max_n)
        check = (
            f"chunked and jax Hessians equal the full one to {res['err']:.1e} (max abs)"
            if res["err"] is not None
            else "compiled only (not executed at this size)"
        )
        lines += [
            f"n = {n} ({check}):",
            "",
            "| variant | temp (MiB) | args (MiB) | out (MiB) | total (MiB) | temp vs full Hessian |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        full = res["rows"]["func.hessian"]["temp"]
        for name, r in res["rows"].items():
            total = r["temp"] + r["args"] + r["out"]
            lines.append(
                f"| {name} | {r['temp']:.2f} | {r['args']:.2f} | {r['out']:.2f} | {total:.2f} | "
                f"{r['temp'] / full:.3g}x |"
            )
        lines.append("")
    lines += ["Reproduce: `python benchmarks/autodiff_bench.py --jacobian-memory`.", ""]
    return "\n".join(lines)


def _emit(text: str, append: bool) -> None:
    print(text)
    if append:
        path = Path(__file__).resolve().parent / "RESULTS.md"
        with path.open("a") as fh:
            fh.write("\n" + text)


#: The sizes of the figures in benchmarks/RESULTS.md (``--full``); the defaults are a quick run.
_FULL = {
    "depth": 20,
    "width": 256,
    "rounds": 60,
    "compile_rounds": 5,
    "tape_ops": 200,
    "hessian_n": [256, 1024],
    "train_rounds": 15,
}
_FULL_TEXT = " ".join(
    f"--{k.replace('_', '-')} {' '.join(map(str, v)) if isinstance(v, list) else v}"
    for k, v in _FULL.items()
)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--depth", type=int, default=8)
    parser.add_argument("--width", type=int, default=128)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=15, help="interleaved timing rounds")
    parser.add_argument("--compile-rounds", type=int, default=2)
    parser.add_argument("--tape-ops", type=int, default=100)
    parser.add_argument("--hessian-n", type=int, nargs="+", default=[256])
    parser.add_argument("--train-rounds", type=int, default=5, help="train-step timing rounds")
    parser.add_argument(
        "--train-step", action="store_true", help="only the train.grad step-time section"
    )
    parser.add_argument("--append", action="store_true", help="append to benchmarks/RESULTS.md")
    parser.add_argument(
        "--jacobian-memory",
        action="store_true",
        help="only the Jacobian-memory section (hvp vs Hessian vs chunked Hessian)",
    )
    parser.add_argument("--jacobian-n", type=int, nargs="+", default=[1024, 4096])
    parser.add_argument("--jacobian-chunks", type=int, nargs="+", default=[16, 128])
    parser.add_argument("--jacobian-check-max-n", type=int, default=1024)
    parser.add_argument(
        "--full", action="store_true", help="RESULTS.md's size (" + _FULL_TEXT + ")"
    )
    args = parser.parse_args(argv)
    if args.full:
        parser.set_defaults(**_FULL)
        args = parser.parse_args(argv)
    print(
        f"bench autodiff: {'full' if args.full else 'quick'} size (depth {args.depth}, width "
        f"{args.width}, {args.rounds} rounds, hessian n {args.hessian_n}); the full size of "
        f"benchmarks/RESULTS.md: `jaxparadigm bench autodiff --full` ({_FULL_TEXT}; several "
        "minutes on 2 cores, about 1 GB of memory)",
        flush=True,
    )
    if args.train_step:
        _emit(train_step_section(args.train_rounds), args.append)
        return
    if args.jacobian_memory:
        section = jacobian_memory_section(
            args.jacobian_n, args.jacobian_chunks, args.jacobian_check_max_n
        )
        _emit(section, args.append)
        return

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    dev = jax.devices()[0]
    lines = [
        "## autodiff",
        "",
        f"Measured {now} on {dev.platform} ({platform.machine()}, {os.cpu_count()} cores, "
        f"jax {jax.__version__}, 1-min load average {load:.1f} at start); the machine is shared "
        "with other engineers' jobs, so absolute times are noisy: read the ratios (interleaved "
        "rounds, medians).",
        "",
    ]
    print("[1/3] MLP gradient: ours vs jax.grad ...", flush=True)
    m = bench_mlp(args.depth, args.width, args.batch, args.rounds, args.compile_rounds)
    r, c = m["run"], m["compile"]
    lines += [
        f"{args.depth}-layer tanh MLP, width {args.width}, batch {args.batch}, float32: "
        "`jax.jit(jaxparadigm.autodiff.grad(loss))` vs `jax.jit(jax.grad(loss))` "
        f"(max relative gradient difference {m['err']:.1e}; jaxpr equations ours/jax "
        f"{m['eqns'][0]}/{m['eqns'][1]}):",
        "",
        "| measure | ours | jax.grad | ratio (goal) |",
        "|---|---:|---:|---:|",
        f"| runtime per step (ms) | {r['ours'] * 1e3:.3f} | {r['jax'] * 1e3:.3f} | "
        f"{r['ours'] / r['jax']:.3f}x (<= 1.05) |",
        f"| trace + lower + compile (ms) | {c['ours'] * 1e3:.1f} | {c['jax'] * 1e3:.1f} | "
        f"{c['ours'] / c['jax']:.2f}x (reported) |",
        "",
    ]
    print("[2/3] eager tape ...", flush=True)
    t = bench_tape(args.tape_ops, 64, max(10, args.rounds // 3))
    lines += [
        f"Tape, eager, {args.tape_ops} ops (`(x * c).tanh()` chain on a float32[64]): per-op time.",
        "",
        "| measure | tape (us/op) | jax eager (us/op) | ratio (goal) |",
        "|---|---:|---:|---:|",
        f"| forward, recording | {t['tape'] * 1e6:.1f} | {t['jax'] * 1e6:.1f} | "
        f"{t['tape'] / t['jax']:.2f}x (<= 2) |",
        f"| backward | {t['tape_bwd'] * 1e6:.1f} | - | {t['tape_bwd'] / t['jax']:.2f}x of a forward op |",
        "",
        "Second order, f(x) = sum(tanh(A x)) + |x|^2 / 2, jitted; `func.hessian` = "
        "jacfwd(our jacrev), `func.hvp` = jvp(our grad):",
        "",
        "| n | hessian ours (ms) | jax.hessian (ms) | ratio | hvp ours (us) | jax hvp (us) | ratio | max rel diff |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    print(f"[3/3] second order (n = {args.hessian_n}) ...", flush=True)
    for n in args.hessian_n:
        s = bench_second_order(n, max(5, args.rounds // 6))
        h, v = s["hessian"], s["hvp"]
        lines.append(
            f"| {n} | {h['ours'] * 1e3:.2f} | {h['jax'] * 1e3:.2f} | {h['ours'] / h['jax']:.2f}x | "
            f"{v['ours'] * 1e6:.1f} | {v['jax'] * 1e6:.1f} | {v['ours'] / v['jax']:.2f}x | "
            f"{s['err']:.1e} |"
        )
    lines += ["", "Reproduce: `jaxparadigm bench autodiff`.", ""]
    _emit("\n".join(lines), args.append)


if __name__ == "__main__":
    main()
