"""What XLA:CPU's own kernels give the compact dtypes: the bound on bfloat16/int8 search (issue 26).

    python benchmarks/search_dtype_probe.py [--n 1000000] [--rounds 3] [--repeats 3]

Our search (``jaxparadigm.retrieval.dense.vector_search``) scores stored rows with a float32 matrix
product after decoding them to float32 block by block (int8 codes times the row scale,
bfloat16 bits shifted), so its scores equal exact float32 scoring of the stored rows. Could
a compact dtype go faster on XLA:CPU? This probe times, in one process, on ``n x 384`` rows and
query batches of 64 and 1, the kernels a search could be built from:

* ``dot f32``: ``q @ x.T`` on float32 rows (what the float32 search does per block);
* ``dot native``: the product in the stored dtype, ``bf16 x bf16 -> f32`` and
  ``int8 x int8 -> int32`` (``preferred_element_type``; the query rounded to the dtype, so *not*
  exact float32 scoring: the fastest that XLA:CPU offers, whatever the accuracy);
* ``bf16 hi+lo``: the rows widened exactly to bfloat16 and one bfloat16 product with the query
  split in two (``q = hi + lo``, ~16 bits), the halves summed: near-float32 scores in bfloat16
  arithmetic;
* ``scan dot``: the search's own scan without its selection: blocks of 8,192 rows (as
  ``VectorSearcher``'s default ``block_rows``; zero rows appended up to a multiple) decoded to float32 and multiplied, each block's
  scores reduced to one maximum per query: what an exact decode path costs on XLA:CPU before
  any top-k;
* ``ours``: ``VectorSearcher(...).search(q, 10)`` with the dtype (decode + dot + top-k);
  ``ours, convert``: the same with bfloat16 widened by XLA's convert instead of the search's
  integer shift ``bits << 16`` (patched in for that kernel only).

Each as queries/s and as a fraction of the limits measured at the start of the same round
(read bandwidth: ``search_bench.read_bandwidth`` on the float32 rows; peak: a 4096^3 float32
``jnp.dot``; this machine's speed drifts between minutes, so every round is set against its own
limits): batch 64 against peak FLOP/s, batch 1 against read bandwidth over the bytes of the
stored dtype.
``XLA_FLAGS`` (printed) is the process's: run the probe under other XLA:CPU options, e.g.
``XLA_FLAGS=--xla_cpu_experimental_ynn_fusion_type=dot``, to see what they give each kernel.
Every kernel runs once per round (``--rounds``, interleaved), each time the median of
``--repeats`` calls after one warm-up; printed: the medians over rounds of the time and of the
fraction. Rows are unit vectors
as in search_bench.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from search_bench import (  # noqa: E402 - the benchmarks folder is not a package
    DIM,
    K,
    _load,
    _median_time,
    cpu_info,
    peak_matmul_flops,
    read_bandwidth,
    unit_rows,
)


@contextlib.contextmanager
def _convert_decode():
    """The search with bfloat16 widened by XLA's convert (``bitcast`` to bfloat16, ``astype``)
    instead of its integer shift ``bits << 16``."""
    import jax
    import jax.numpy as jnp

    from jaxparadigm.retrieval.dense import vector_search as topk_search

    def convert(bits):
        return jax.lax.bitcast_convert_type(bits, jnp.bfloat16).astype(jnp.float32)

    kept = topk_search.bfloat16_bits_to_float32
    topk_search.bfloat16_bits_to_float32 = convert
    topk_search._placement_search.cache_clear()
    try:
        yield
    finally:
        topk_search.bfloat16_bits_to_float32 = kept
        topk_search._placement_search.cache_clear()


SCAN_ROWS = 8192  # VectorSearcher's default block_rows


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=3, help="calls per kernel per round")
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args(argv)
    import jax
    import jax.numpy as jnp

    from jaxparadigm.retrieval.dense.vector_search import (
        RowSource,
        VectorSearcher,
        _as_float32,  # the search kernel's own decode: scan dot widens rows exactly as it does
        compact_rows,
    )

    print(
        f"search dtype probe: {a.n:,} x {DIM} rows; CPU: {cpu_info()}; load {_load()}; "
        f"XLA_FLAGS={os.environ.get('XLA_FLAGS', '')!r}"
    )
    x = unit_rows(a.n, DIM, 0)
    stored = {d: compact_rows(x, d)[0] for d in ("float32", "bfloat16", "int8")}
    pad = -a.n % SCAN_ROWS  # scan dot's blocks: zero rows appended (at most 8,191; timed too)

    def padded(r):
        return np.concatenate([r, np.zeros((pad, DIM), r.dtype)])

    scanned = {d: jax.device_put(padded(r)) for d, r in stored.items() if d != "bfloat16"}
    scanned["bfloat16"] = jax.device_put(padded(stored["bfloat16"]).view(np.uint16))  # as stored
    stored = {d: jax.device_put(r) for d, r in stored.items()}  # bfloat16 as ml_dtypes bfloat16
    native = {
        "float32": jax.jit(lambda q, r: q @ r.T),
        "bfloat16": jax.jit(
            lambda q, r: jnp.dot(q.astype(r.dtype), r.T, preferred_element_type=jnp.float32)
        ),
        "int8": jax.jit(
            lambda q, r: jnp.dot(
                jnp.round(q * 127).astype(jnp.int8), r.T, preferred_element_type=jnp.int32
            )
        ),
    }

    @jax.jit
    def scan_dot(q, r):
        blocks = r.reshape(-1, SCAN_ROWS, r.shape[1])
        return jax.lax.scan(lambda c, b: (c, jnp.max(q @ _as_float32(b).T, axis=1)), None, blocks)[
            1
        ]

    @jax.jit
    def hi_lo(q, r):  # q = hi + lo in bfloat16 (~16 bits of q), rows widened exactly to bfloat16
        hi = q.astype(jnp.bfloat16)
        lo = (q - hi.astype(jnp.float32)).astype(jnp.bfloat16)
        s = jnp.dot(
            jnp.concatenate([hi, lo]), r.astype(jnp.bfloat16).T, preferred_element_type=jnp.float32
        )
        return s[: q.shape[0]] + s[q.shape[0] :]

    record = {
        "rows": a.n,
        "xla_flags": os.environ.get("XLA_FLAGS", ""),
        "limits": [],
        "rows_out": [],
    }
    source = RowSource([x])
    searchers = {d: VectorSearcher(source, dtype=d) for d in stored}
    times: dict = {}
    for r in range(a.rounds):  # interleaved: every kernel once per round, medians over rounds
        bw, peak = read_bandwidth(stored["float32"]), peak_matmul_flops()  # this round's limits
        record["limits"].append({"read_bandwidth": bw, "peak_flops": peak})
        print(f"round {r + 1}: read bandwidth {bw / 1e9:.1f} GB/s, peak {peak / 1e9:.0f} GFLOP/s")
        for batch in (64, 1):
            q = unit_rows(batch, DIM, 2)
            qd = jax.device_put(q)
            for dtype, rows in stored.items():
                kernels = {"dot native": lambda r=rows, f=native[dtype], qd=qd: f(qd, r)}
                if dtype != "float32":
                    kernels["bf16 hi+lo"] = lambda r=rows, qd=qd: hi_lo(qd, r)
                kernels["scan dot"] = lambda r=scanned[dtype], qd=qd: scan_dot(qd, r)
                kernels["ours"] = lambda s=searchers[dtype], q=q: s.search(q, K).ids
                if dtype == "bfloat16":
                    kernels["ours, convert"] = kernels["ours"]
                for name, fn in kernels.items():
                    with _convert_decode() if name == "ours, convert" else contextlib.nullcontext():
                        jax.block_until_ready(fn())
                        s = _median_time(lambda fn=fn: jax.block_until_ready(fn()), a.repeats)
                    frac = 2 * batch * a.n * DIM / s / peak if batch > 1 else rows.nbytes / s / bw
                    times.setdefault((batch, dtype, name), []).append((s, frac))
    for (batch, dtype, name), runs in times.items():
        s = statistics.median(t for t, _ in runs)
        frac = statistics.median(f for _, f in runs)  # each round against its own limits
        what = "of peak FLOP/s" if batch > 1 else "of read bandwidth"
        print(
            f"batch {batch:2d} {dtype:8s} {name:13s} {s * 1e3:9.2f} ms  {batch / s:8.1f} q/s  "
            f"{100 * frac:5.1f}% {what}"
        )
        record["rows_out"].append(
            {"batch": batch, "dtype": dtype, "kernel": name, "s": s, "fraction": frac}
        )
    print(f"load after: {_load()}")
    return record


if __name__ == "__main__":
    main()
