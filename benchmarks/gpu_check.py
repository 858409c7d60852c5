"""A GPU run ready to fire (issue 26, part 4): our kernels as fractions of the device's limits, and
the same programs on the device and on the CPU.

    python benchmarks/gpu_check.py [--tiny] [--platform cpu] [--sections ...] [--json PATH]

``benchmarks/gpu_check.sh`` runs it after the GPU test subset. Every section prints its figures as
soon as they are measured (a run cut by a time limit keeps what it printed), each with what it is.
On the default backend (``--platform NAME`` picks one; ``cpu`` with ``--tiny`` is the test here):

1. ``limits``: read bandwidth B (``search_bench.read_bandwidth``: a jitted ``x.sum(1)`` over an
   ``n x 384`` float32 array, every byte read once) and peak matmul FLOP/s P for float32
   (``search_bench.peak_matmul_flops``, at JAX's default matmul precision, which may be TF32 on a
   GPU, and at ``highest``) and bfloat16 (the same ``[m, m] @ [m, m]``, ``2 m^3`` FLOPs, median
   of 10).
2. ``charlm``: configs/charlm_pydoc.yaml scaled up (``--charlm d_model,layers,heads,seq,batch``;
   the default, 1024,8,16,512,32: 101.6M parameters, 16,384 tokens per step, 10.8 TFLOP per step,
   cannot take under 10.9 ms even at an H200's datasheet 990 TFLOP/s bfloat16) with compute dtype
   ``--charlm-dtype`` (default bfloat16); our train step (``chain_for``: clip,
   AdamW, warmup-cosine; guard on; state donated). Model FLOPs per token (train_bench's count)

       F = 6 N + 12 L T d     (N parameters; L layers, T = seq_len, d = d_model)

   6 N: forward (2 N) and backward (4 N) of the parameter matmuls; 12 L T d: ``Q K^T`` and ``A V``
   (4 T d per token and layer forward, twice that backward), the causal mask not discounted.
   Reported: step time, tokens/s and MFU = tokens/s * F / P[compute dtype].
3. ``adam``: our ``adam`` (and ``optax.adam`` beside it) on ``--adam-params`` float32 parameters in
   10 leaves, one donated jitted step; GB/s = 28 bytes/param (read p, g, m, v; write p, m, v:
   ``optim_bench.BYTES_PER_PARAM``) / median step time, as a fraction of B.
4. ``search``: ``search_bench.main`` as it is (``VectorSearcher`` top-10 over ``--search-n`` x 384
   rows, float32 / bfloat16 / int8, batch 64 and batch 1, with its own limits measured in the same
   process: batch 1 as GB/s over the bytes read / B, batch 64 as ``2 n d q`` FLOP/s / P).
5. ``same``: the same small programs on the default device and on ``jax.devices("cpu")[0]``: a
   tiny charlm's losses over its first steps, 3 Adam updates, a top-10 search (float32 and int8).
   Device results at JAX's default matmul precision and at ``highest``; max abs difference and
   max relative difference ``max|a - b| / max|b|`` against the CPU, and whether the top-10 ids
   are identical. On a CPU-only run both sides are the CPU (the code path is what is checked).
6. ``mesh``: the 2-D mesh (``train.sharding.mode=fsdp_tensor``) on the default backend's devices:
   ``fsdp n/T x tensor T`` (T = 2 when the device count is even, else 1: one GPU is a 1 x 1
   mesh), the tiny charlm of section 5 made in its layout (``initial_state``) and stepped; its
   losses against one CPU device's (max relative difference), the state's bytes on the busiest
   device against ``1 / n`` of the state, and the compiled step's collectives.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import NamedTuple

import numpy as np

HERE = Path(__file__).resolve().parent
SECTIONS = ("limits", "charlm", "adam", "search", "same", "mesh")
DIM, K = 384, 10


class Sizes(NamedTuple):
    search_n: int
    peak_n: int
    charlm: tuple[int, int, int, int, int]  # d_model, layers, heads, seq_len, batch
    adam_params: int
    steps: int  # timed steps per round (charlm)
    reps: int  # timed Adam steps per variant
    same_rows: int  # rows of the same-program search
    same_steps: int  # steps of the same-program train run


GPU = Sizes(1_000_000, 8192, (1024, 8, 16, 512, 32), 100_000_000, 10, 30, 50_000, 5)
TINY = Sizes(4096, 256, (32, 1, 2, 32, 4), 100_000, 2, 5, 2048, 3)
SAME_CHARLM = (32, 1, 2, 32, 4)  # the same-program train step (any backend: small)


def _say(text: str = "") -> None:
    print(text, flush=True)


def limits(sizes: Sizes) -> dict:
    """Read bandwidth (bytes/s) and peak matmul FLOP/s for float32 and bfloat16."""
    import jax
    import jax.numpy as jnp
    from search_bench import _median_time as _median_seconds
    from search_bench import peak_matmul_flops, read_bandwidth

    x = jax.random.normal(jax.random.key(0), (sizes.search_n, DIM), jnp.float32)
    bandwidth = read_bandwidth(x)
    del x
    f32 = peak_matmul_flops(sizes.peak_n)
    with jax.default_matmul_precision("highest"):  # true float32 products (a GPU's default: TF32?)
        f32_highest = peak_matmul_flops(sizes.peak_n)
    m = sizes.peak_n
    a = jax.random.normal(jax.random.key(1), (m, m), jnp.bfloat16)
    dot = jax.jit(lambda v: jnp.dot(v, v))
    dot(a).block_until_ready()
    bf16 = 2 * m**3 / _median_seconds(lambda: dot(a).block_until_ready(), 10)
    precision = jax.config.jax_default_matmul_precision or "default"
    _say(
        f"limits: read bandwidth {bandwidth / 1e9:.1f} GB/s (jitted x.sum(1) over "
        f"{sizes.search_n:,} x {DIM} float32); peak matmul ({m} x {m} @ {m} x {m}) float32 "
        f"{f32 / 1e12:.2f} TFLOP/s (matmul precision {precision}; {f32_highest / 1e12:.2f} at "
        f"highest), bfloat16 {bf16 / 1e12:.2f} TFLOP/s"
    )
    peaks = {"float32": f32, "float32_highest": f32_highest, "bfloat16": bf16}
    return {"read_bytes_per_s": bandwidth, "peak_flops": peaks}


def charlm_config(shape: tuple[int, int, int, int, int], dtype: str):
    """configs/charlm_pydoc.yaml with ``(d_model, layers, heads, seq_len, batch)`` and ``dtype``."""
    from jaxparadigm.config import load_config

    d, layers, heads, seq, batch = shape
    overrides = [
        f"model.d_model={d}",
        f"model.num_layers={layers}",
        f"model.num_heads={heads}",
        f"model.context={seq}",
        f"model.dtype={dtype}",
        f"data.seq_len={seq}",
        f"data.batch_size={batch}",
    ]
    return load_config(HERE.parent / "configs" / "charlm_pydoc.yaml", overrides)


def charlm_stepper(cfg, dataset, step=None):
    """``(step, state)``: our jitted train step (chain_for, guard on, donated; ``step`` when given,
    so that a second device reuses its compile cache) and a fresh state on the default device."""
    from flax import nnx

    from jaxparadigm.build import build_model
    from jaxparadigm.optim import chain_for
    from jaxparadigm.train.objectives import next_byte_loss
    from jaxparadigm.train.train_step import init_train_state, make_train_step

    tx = chain_for(cfg.optim)
    graphdef, variables = nnx.split(build_model(cfg.model, dataset, cfg.train.seed))
    state = init_train_state(nnx.to_pure_dict(variables), tx, cfg.train.seed)
    return step or make_train_step(graphdef, next_byte_loss, tx), state


def charlm(sizes: Sizes, dtype: str, peak: dict | None) -> dict:
    """Tokens/s and MFU of the scaled charlm train step (module docstring, section 2)."""
    import jax
    from train_bench import _model_flops_per_token

    from jaxparadigm.train.data import build_dataset

    cfg = charlm_config(sizes.charlm, dtype)
    dataset = build_dataset(cfg.data)
    batches = [jax.device_put(dataset.batch(i)) for i in range(4)]
    step, state = charlm_stepper(cfg, dataset)
    n_params = sum(x.size for x in jax.tree.leaves(state.params))
    t0 = time.perf_counter()
    for i in range(2):  # compile + one warm step
        state, metrics = step(state, batches[i % len(batches)])
    jax.block_until_ready(metrics["loss"])
    compile_s = time.perf_counter() - t0
    rates = []
    for _ in range(3):
        t0 = time.perf_counter()
        for i in range(sizes.steps):
            state, metrics = step(state, batches[i % len(batches)])
        jax.block_until_ready(metrics["loss"])
        rates.append(sizes.steps / (time.perf_counter() - t0))
    steps_per_s = statistics.median(rates)
    tokens = cfg.data.batch_size * cfg.data.seq_len
    flops_per_token = _model_flops_per_token(cfg, dataset)
    model_flops = steps_per_s * tokens * flops_per_token
    out = {
        "shape": dict(
            zip(("d_model", "layers", "heads", "seq_len", "batch"), sizes.charlm, strict=True)
        ),
        "dtype": dtype,
        "params": n_params,
        "tokens_per_step": tokens,
        "model_flops_per_token": flops_per_token,
        "step_ms": 1000 / steps_per_s,
        "tokens_per_s": steps_per_s * tokens,
        "model_flops_per_s": model_flops,
        "final_loss": float(metrics["loss"]),
    }
    d, layers, heads, seq, batch = sizes.charlm
    _say(
        f"charlm: d_model {d}, {layers} layers, {heads} heads, seq {seq}, batch {batch}, compute "
        f"{dtype}; {n_params:,} params, {tokens:,} tokens/step, F = 6N + 12LTd = "
        f"{flops_per_token / 1e6:.1f} MFLOP/token; compile + 1 step {compile_s:.1f} s"
    )
    line = (
        f"charlm: step {out['step_ms']:.2f} ms (>= 10 ms: {'yes' if out['step_ms'] >= 10 else 'no'})"
        f"; {out['tokens_per_s']:,.0f} tokens/s; model {model_flops / 1e12:.3f} TFLOP/s"
    )
    if peak is not None:
        out["mfu"] = model_flops / peak[dtype]
        line += f"; MFU {out['mfu']:.1%} of the measured {dtype} matmul peak"
    _say(line + f"; loss after {2 + 3 * sizes.steps} steps {out['final_loss']:.4f}")
    return out


def adam_bandwidth(sizes: Sizes, bandwidth: float | None) -> dict:
    """GB/s of our Adam step (and optax's) at 28 bytes/param, as a fraction of the read bandwidth."""
    import optax
    from optim_bench import BYTES_PER_PARAM, _jax_runner, _leaf_sizes, measure

    from jaxparadigm.optim import adam

    n = sizes.adam_params
    leaves = _leaf_sizes(n, 10)
    runners = {name: _jax_runner(tx, leaves, 0)[0] for name, tx in (("ours adam", adam(1e-3)),
                                                                   ("optax adam", optax.adam(1e-3)))}  # fmt: skip
    times = measure(runners, sizes.reps)
    out = {}
    for name, ts in times.items():
        gbs = BYTES_PER_PARAM * n / statistics.median(ts) / 1e9
        out[name] = {"median_ms": 1000 * statistics.median(ts), "GBps": gbs}
        line = f"adam: {name}, {n:,} params in 10 leaves: {out[name]['median_ms']:.3f} ms/step, "
        line += f"{gbs:.1f} GB/s at {BYTES_PER_PARAM} B/param"
        if bandwidth is not None:
            out[name]["fraction_of_read_bandwidth"] = gbs * 1e9 / bandwidth
            line += f" = {gbs * 1e9 / bandwidth:.0%} of the read bandwidth"
        _say(line)
    return out


def search(sizes: Sizes) -> dict:
    """search_bench.main at ``sizes.search_n`` rows (its own limits, table and checks)."""
    import search_bench

    argv = ["--n", str(sizes.search_n), "--rounds", "3", "--no-faiss"]
    return search_bench.main([*argv, "--peak-n", str(sizes.peak_n)])


def _differences(got: np.ndarray, ref: np.ndarray) -> tuple[float, float]:
    """``(max|a - b|, max|a - b| / max|b|)``."""
    got, ref = np.asarray(got, np.float64), np.asarray(ref, np.float64)
    diff = float(np.max(np.abs(got - ref)))
    return diff, diff / max(float(np.max(np.abs(ref))), np.finfo(np.float64).tiny)


def _same_programs(rows: int, steps: int):
    """The programs of section 5: name -> ``run(device) -> array`` (search: ``(ids, scores)``)."""
    import jax

    from jaxparadigm.optim import adam
    from jaxparadigm.retrieval.dense.vector_search import RowSource, VectorSearcher
    from jaxparadigm.train.data import build_dataset

    sys.path.insert(0, str(HERE))
    from index_bench import unit_rows

    cfg = charlm_config(SAME_CHARLM, "float32")
    dataset = build_dataset(cfg.data)
    batches = [dataset.batch(i) for i in range(steps)]
    box: dict = {}

    def losses(device):
        with jax.default_device(device):
            step, state = charlm_stepper(cfg, dataset, box.get("step"))
            box["step"] = step
            out = []
            for b in batches:
                state, metrics = step(state, b)
                out.append(metrics["loss"])
            return np.array(jax.device_get(out))

    p0 = np.random.default_rng(0).standard_normal(10_000).astype(np.float32)
    g0 = 0.01 * np.random.default_rng(1).standard_normal(10_000).astype(np.float32)

    tx = adam(1e-2)
    update = jax.jit(tx.update)

    def adam_params(device):
        with jax.default_device(device):
            params, state = jax.device_put(p0, device), tx.init(jax.device_put(p0, device))
            for _ in range(3):
                updates, state = update(jax.device_put(g0, device), state, params)
                params = params + updates
            return np.asarray(params)

    x, q = unit_rows(rows, DIM, 0), unit_rows(8, DIM, 1)

    def top10(dtype):
        def run(device):
            return VectorSearcher(RowSource([x]), dtype=dtype, devices=[device]).search(q, K)

        return run

    return {
        f"charlm losses over {steps} steps": losses,
        "adam params after 3 updates": adam_params,
        "search top-10 float32": top10("float32"),
        "search top-10 int8": top10("int8"),
    }


def same_programs(sizes: Sizes) -> dict:
    """Each program on the default device (default and highest matmul precision) vs the CPU."""
    import jax

    device, cpu = jax.devices()[0], jax.devices("cpu")[0]
    note = " (both sides are the CPU: --platform cpu checks the code path)" if device == cpu else ""
    _say(f"same program, {device.platform}:{device.id} ({device.device_kind}) vs cpu:0{note}")
    out: dict = {}
    for name, run in _same_programs(sizes.same_rows, sizes.same_steps).items():
        ref = run(cpu)
        for precision in ("default", "highest"):
            if precision == "default":
                got = run(device)
            else:
                with jax.default_matmul_precision(precision):
                    got = run(device)
            key = f"{name}, {device.platform} {precision} precision"
            if isinstance(ref, tuple):  # a TopK
                same_ids = bool(np.array_equal(got.ids, ref.ids))
                diff, rel = _differences(got.scores, ref.scores)
                out[key] = {"ids_identical": same_ids, "max_abs": diff, "max_rel": rel}
                text = f"top-10 ids identical: {'yes' if same_ids else 'NO'}; scores"
            else:
                diff, rel = _differences(got, ref)
                out[key] = {"max_abs": diff, "max_rel": rel}
                text = f"values {np.array2string(got, precision=5)}" if got.size < 10 else "params"
            _say(f"same: {key} vs cpu: {text} max abs diff {diff:.3g}, max rel diff {rel:.3g}")
    return out


def _mesh_losses(cfg, dataset, sharding, steps: int, device=None) -> tuple[list, dict]:
    """Losses of ``steps`` charlm steps with ``sharding`` (a ShardingSettings; mode ``none``
    runs on ``device``) and the state's figures: busiest-device bytes, total, collectives."""
    import dataclasses

    import jax
    from flax import nnx

    from jaxparadigm.build import build_model, train_settings
    from jaxparadigm.optim import chain_for
    from jaxparadigm.train.initial_state import initial_state, model_in_layout
    from jaxparadigm.train.objectives import next_byte_loss
    from jaxparadigm.train.sharding import bytes_per_device, collective_stats, shard_batch
    from jaxparadigm.train.train_step import make_train_step

    settings = dataclasses.replace(train_settings(cfg), sharding=sharding)
    tx = chain_for(cfg.optim)
    with jax.default_device(device or jax.devices()[0]):
        make = lambda: build_model(cfg.model, dataset, cfg.train.seed)
        graphdef, variables = nnx.split(model_in_layout(make, sharding))
        state, layout = initial_state(variables, tx, settings)
        step = make_train_step(graphdef, next_byte_loss, tx, layout=layout)
        place = jax.device_put if layout is None else (lambda b: shard_batch(b, layout.mesh))
        batches = [place(dataset.batch(i)) for i in range(steps)]
        fig = {"state_bytes_total": sum(x.nbytes for x in jax.tree_util.tree_leaves(state))}
        fig["state_bytes_per_device"] = max(bytes_per_device(state).values())
        if layout is not None:
            ops = collective_stats(step.lower(state, batches[0]).compile().as_text())
            fig["collectives"] = {k: v["count"] for k, v in ops.items() if v["count"]}
        losses = []
        for batch in batches:
            state, metrics = step(state, batch)
            losses.append(metrics["loss"])
        return [float(x) for x in jax.device_get(losses)], fig


def mesh_section(sizes: Sizes) -> dict:
    """The fsdp x tensor train step on the default backend's devices vs one CPU device."""
    import jax

    from jaxparadigm.train.data import build_dataset
    from jaxparadigm.train.settings import ShardingSettings

    n = jax.device_count()
    tensor = 2 if n % 2 == 0 else 1
    fsdp = n // tensor
    cfg = charlm_config(SAME_CHARLM[:4] + (fsdp * -(-4 // fsdp),), "float32")  # >= 4 rows
    dataset = build_dataset(cfg.data)
    steps = max(3, sizes.same_steps)
    ref, _ = _mesh_losses(cfg, dataset, ShardingSettings(), steps, jax.devices("cpu")[0])
    sharding = ShardingSettings(mode="fsdp_tensor", tensor=tensor, min_size=1)
    got, fig = _mesh_losses(cfg, dataset, sharding, steps)
    _, rel = _differences(np.array(got), np.array(ref))
    share = fig["state_bytes_per_device"] / fig["state_bytes_total"]
    dev = jax.devices()[0]
    _say(
        f"mesh: fsdp {n // tensor} x tensor {tensor} on {n} x {dev.platform} ({dev.device_kind}):"
        f" losses {np.array2string(np.array(got), precision=5)} vs one cpu device: max rel diff "
        f"{rel:.3g}; state {fig['state_bytes_per_device']:,} B on the busiest device = "
        f"{share:.3f} of {fig['state_bytes_total']:,} (1/{n} = {1 / n:.3f}); collectives "
        f"{fig.get('collectives', {})}"
    )
    return {"mesh": {"fsdp": n // tensor, "tensor": tensor}, "losses": got, "reference": ref,
            "max_rel": rel, "state_share_busiest": share, **fig}  # fmt: skip


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tiny", action="store_true", help="tiny sizes: the whole run in seconds")
    ap.add_argument("--platform", default=None, help="JAX platform, e.g. cpu (default: JAX's)")
    ap.add_argument("--sections", default=",".join(SECTIONS), help="comma-separated subset")
    ap.add_argument("--charlm-dtype", default="bfloat16", choices=("float32", "bfloat16"))
    ap.add_argument("--charlm", default=None, help="d_model,layers,heads,seq_len,batch")
    ap.add_argument("--adam-params", type=int, default=None)
    ap.add_argument("--search-n", type=int, default=None)
    ap.add_argument("--json", default=None, help="also write the figures here")
    a = ap.parse_args(argv)
    sections = a.sections.split(",")
    unknown = [s for s in sections if s not in SECTIONS]
    if unknown:
        ap.error(f"--sections: got {unknown}, expected a subset of {','.join(SECTIONS)}")
    sizes = TINY if a.tiny else GPU
    if a.charlm:
        shape = tuple(int(v) for v in a.charlm.split(",") if v.strip().isdigit())
        if len(shape) != 5 or len(a.charlm.split(",")) != 5:
            ap.error(f"--charlm: got {a.charlm!r}, expected d_model,layers,heads,seq_len,batch")
        sizes = sizes._replace(charlm=shape)
    sizes = sizes._replace(
        adam_params=a.adam_params or sizes.adam_params, search_n=a.search_n or sizes.search_n
    )
    if a.platform:  # before JAX starts; keep the CPU beside it for section 5
        os.environ["JAX_PLATFORMS"] = a.platform if a.platform == "cpu" else f"{a.platform},cpu"
    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))
    import jax
    from index_bench import cpu_info

    dev = jax.devices()[0]
    _say(
        f"gpu_check: jax {jax.__version__}, backend {jax.default_backend()}, "
        f"{jax.device_count()} x {dev.device_kind}; host {cpu_info()}"
    )
    _say(f"gpu_check: sizes {'tiny' if a.tiny else 'full'}: {sizes._asdict()}")
    results: dict = {"backend": jax.default_backend(), "device": dev.device_kind}
    started = time.perf_counter()
    for section in sections:
        t0 = time.perf_counter()
        if section == "limits":
            results["limits"] = limits(sizes)
        elif section == "charlm":
            peak = results.get("limits", {}).get("peak_flops")
            results["charlm"] = charlm(sizes, a.charlm_dtype, peak)
        elif section == "adam":
            results["adam"] = adam_bandwidth(
                sizes, results.get("limits", {}).get("read_bytes_per_s")
            )
        elif section == "search":
            results["search"] = search(sizes)
        elif section == "mesh":
            results["mesh"] = mesh_section(sizes)
        else:
            results["same"] = same_programs(sizes)
        _say(f"gpu_check: section {section} done in {time.perf_counter() - t0:.1f} s")
    _say(f"gpu_check: all sections done in {time.perf_counter() - started:.1f} s")
    if a.json:
        Path(a.json).write_text(json.dumps(results, indent=2, default=float))
    return results


if __name__ == "__main__":
    main()
