"""MiniLM encoder throughput and single-query latency: our Flax NNX/jit encoder vs sentence-transformers.

    jaxparadigm bench retrieval [--n 1024] [--repeats 3] [--queries 100] [--results benchmarks/RESULTS.md]

Workload: ``n`` sentences of 5-60 words (drawn with a fixed seed from the words of
``pydoc_data.topics``), encoded at batch 32 and 128 (sentences/s, median over ``repeats``, the two
implementations interleaved in the same process), then ``queries`` single-sentence calls (P50/P99
latency). sentence-transformers is used only when importable (it is optional, never a dependency);
then the embeddings of both are also compared (min cosine). Serves C5.2 (latency/throughput) and
C1.1. The CPU may be shared with other jobs: ratios measured interleaved are the robust figure.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time

import numpy as np


def make_sentences(n: int, seed: int = 0, lo: int = 5, hi: int = 60) -> list[str]:
    """``n`` pseudo-sentences of ``lo..hi`` words sampled from the pydoc topic vocabulary."""
    from pydoc_data.topics import topics

    vocab = sorted({w for text in topics.values() for w in text.split() if w.isalpha()})
    rng = np.random.default_rng(seed)
    lengths = rng.integers(lo, hi + 1, size=n)
    return [" ".join(rng.choice(vocab, size=k)).capitalize() + "." for k in lengths]


def _load_st():
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError:
        print("sentence-transformers: not installed, the reference column is left out")
        return None
    from jaxparadigm.retrieval.encoder.sentence_encoder import minilm_path

    return SentenceTransformer(str(minilm_path()), device="cpu")


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def _latencies(fn, queries: list[str]) -> list[float]:
    return [_timed(lambda q=q: fn(q)) * 1e3 for q in queries]


def _pct(xs: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(xs), q))


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[32])
    parser.add_argument("--results", help="append a '## retrieval' section to this markdown file")
    parser.add_argument(
        "--cpu-devices",
        type=int,
        default=1,
        help="K > 1: the process gets K CPU devices (XLA_FLAGS, before jax starts) and a second "
        "row, ours with micro-batches over the K devices in turn, is measured interleaved",
    )
    parser.add_argument(
        "--full",
        action="store_true",
        help="RESULTS.md's size: --n 1024 --repeats 3 --queries 100 --batch-sizes 32 128",
    )
    args = parser.parse_args(argv)
    if args.full:
        parser.set_defaults(n=1024, repeats=3, queries=100, batch_sizes=[32, 128])
        args = parser.parse_args(argv)
    print(
        f"bench retrieval: {'full' if args.full else 'quick'} size ({args.n} sentences, "
        f"{args.repeats} repeats, batch sizes {args.batch_sizes}); the full size of "
        "benchmarks/RESULTS.md: `jaxparadigm bench retrieval --full` (several minutes on 2 "
        "cores, about 2 GB of memory)",
        flush=True,
    )

    if args.cpu_devices < 1:
        raise SystemExit(f"--cpu-devices: got {args.cpu_devices}, expected an int >= 1")
    if args.cpu_devices > 1:
        if "jax" in sys.modules:
            raise SystemExit("--cpu-devices: jax is already imported in this process")
        flags = os.environ.get("XLA_FLAGS", "")
        if "xla_force_host_platform_device_count" not in flags:
            os.environ["XLA_FLAGS"] = (
                f"{flags} --xla_force_host_platform_device_count={args.cpu_devices}".strip()
            )
    from jaxparadigm.retrieval import SentenceEncoder, load_minilm

    load_before = os.getloadavg()[0]
    sents = make_sentences(args.n)
    queries = make_sentences(args.queries, seed=1, lo=5, hi=20)
    t0 = time.perf_counter()
    ours = load_minilm()
    load_s = time.perf_counter() - t0
    st = _load_st()
    impls = {"jaxparadigm": ours.encode}
    if args.cpu_devices > 1:
        import jax

        devices = jax.devices()[: args.cpu_devices]
        if len(devices) < args.cpu_devices:
            raise SystemExit(f"--cpu-devices {args.cpu_devices}: jax sees {len(jax.devices())}")
        spread = SentenceEncoder(ours.model, ours.tokenizer, ours.max_seq_length, devices=devices)
        impls[f"jaxparadigm ({len(devices)} devices)"] = spread.encode
    if st is not None:
        impls["sentence-transformers"] = lambda s, **kw: st.encode(s, **kw)

    rows: dict[str, dict] = {name: {} for name in impls}
    print(f"encoding {args.n} sentences x {args.repeats} repeats per batch size ...", flush=True)
    for bs in args.batch_sizes:
        # warm-up: compiles every (rows, length) bucket this workload needs (ours) / allocator (st)
        for name, fn in impls.items():
            rows[name][f"warmup_s@{bs}"] = _timed(lambda fn=fn, bs=bs: fn(sents, batch_size=bs))
        times: dict[str, list[float]] = {name: [] for name in impls}
        for _ in range(args.repeats):  # interleaved
            for name, fn in impls.items():
                times[name].append(_timed(lambda fn=fn, bs=bs: fn(sents, batch_size=bs)))
        for name in impls:
            rows[name][f"sent/s@{bs}"] = args.n / statistics.median(times[name])

    for fn in impls.values():
        for q in queries:  # warm-up pass: compiles the single-row length buckets (ours)
            fn(q)
    lat: dict[str, list[float]] = {name: [] for name in impls}
    for q in queries:  # interleaved, one query at a time
        for name, fn in impls.items():
            lat[name] += _latencies(fn, [q])
    for name in impls:
        rows[name]["p50_ms"] = _pct(lat[name], 50)
        rows[name]["p99_ms"] = _pct(lat[name], 99)

    parity = None
    if st is not None:
        a = ours.encode(sents[:128])
        b = st.encode(sents[:128], convert_to_numpy=True)
        parity = float(np.min(np.sum(a * b, axis=1)))

    lines = [
        "## retrieval",
        "",
        f"all-MiniLM-L6-v2, {args.n} sentences of 5-60 words, median of {args.repeats} interleaved "
        f"runs; {args.queries} single-query calls. {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} CPUs shared with other jobs while measuring (ratios are the robust "
        f"figure); 1-minute load average {load_before:.1f} at the start, "
        f"{os.getloadavg()[0]:.1f} at the end. Model load {load_s:.1f} s.",
        "",
        "| implementation | " + " | ".join(f"sent/s @ batch {b}" for b in args.batch_sizes)
        + " | single-query P50 ms | P99 ms | warm-up (compile) s |",
        "|---|" + "---|" * (len(args.batch_sizes) + 3),
    ]  # fmt: skip
    for name, r in rows.items():
        warm = " / ".join(f"{r[f'warmup_s@{b}']:.1f}" for b in args.batch_sizes)
        lines.append(
            f"| {name} | "
            + " | ".join(f"{r[f'sent/s@{b}']:.0f}" for b in args.batch_sizes)
            + f" | {r['p50_ms']:.1f} | {r['p99_ms']:.1f} | {warm} |"
        )
    if st is not None:
        ref = rows["sentence-transformers"]
        for name in (n for n in rows if n.startswith("jaxparadigm")):
            ratios = ", ".join(
                f"batch {b}: {rows[name][f'sent/s@{b}'] / ref[f'sent/s@{b}']:.2f}x"
                for b in args.batch_sizes
            )
            lines += [
                "",
                f"Throughput ratio {name} / sentence-transformers: {ratios}; P50 latency ratio "
                f"{ref['p50_ms'] / rows[name]['p50_ms']:.2f}x.",
            ]
        lines.append(
            f"Min cosine between ours and sentence-transformers on 128 of these "
            f"sentences: {parity:.7f}."
        )
    else:
        lines += ["", "sentence-transformers not installed: no reference row."]
    lines.append(
        f"Ours runs every batch size as length-sorted micro-batches of <= {ours.micro_batch} rows "
        f"padded to {len(ours.length_buckets)} bucket lengths {ours.length_buckets}; "
        f"jit compiled {len(ours.compiled_shapes)} (rows, length) shapes for this whole run: "
        f"{sorted(ours.compiled_shapes)}."
    )
    text = "\n".join(lines) + "\n"
    print(text)
    if args.results:
        with open(args.results, "a", encoding="utf-8") as fh:
            fh.write("\n" + text)
    return {"rows": rows, "parity": parity, "compiled_shapes": sorted(ours.compiled_shapes)}


if __name__ == "__main__":
    main()
