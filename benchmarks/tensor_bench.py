"""View.materialize vs the native jnp op, and transfer_profile figures (C2.1, C2.3).

    jaxparadigm bench tensor [--n 1024] [--rounds 40] [--mib 1 16 64]

For transpose, expand and slice, both sides are jitted and called alternately (interleaved rounds,
medians), so machine load hits both alike; the figure that matters is the ratio
``materialize / native`` (goal <= 1.2x). Prints a Markdown section for benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np

from jaxparadigm.tensor import View, transfer_profile


def _time_call(fn, arg, inner: int) -> float:
    start = time.perf_counter()
    for _ in range(inner):
        out = fn(arg)
    out.block_until_ready()
    return (time.perf_counter() - start) / inner


def _cases(n: int):
    """(name, native fn on the array, same op from the flat storage, view, array, storage)."""
    x = jnp.asarray(np.random.default_rng(0).standard_normal((n, n), np.float32))
    row = x[0]
    flat = x.reshape(-1)
    base = View.contiguous((n, n))
    return [
        ("transpose", lambda a: a.T, lambda s: s.reshape(n, n).T, base.transpose(0, 1), x, flat),
        (
            "expand",
            lambda r: jnp.broadcast_to(r, (n, n)),
            lambda s: jnp.broadcast_to(s, (n, n)),
            View.contiguous((n,)).expand(n, n),
            row,
            row,
        ),
        (
            "slice",
            lambda a: a[1:-1, 2:-2:2],
            lambda s: s.reshape(n, n)[1:-1, 2:-2:2],
            base.slice(0, 1, -1).slice(1, 2, -2, 2),
            x,
            flat,
        ),
    ]


def materialize_ratios(n: int, rounds: int, inner: int = 5) -> list[dict]:
    """Median times and ratios; all three functions jitted, timed in interleaved rounds."""
    results = []
    for name, native_fn, flat_fn, view, array, storage in _cases(n):
        native, from_flat = jax.jit(native_fn), jax.jit(flat_fn)
        mat = jax.jit(view.materialize)
        expected = np.asarray(native(array))
        np.testing.assert_array_equal(np.asarray(mat(storage)), expected)
        np.testing.assert_array_equal(np.asarray(from_flat(storage)), expected)
        times = {"native": [], "flat": [], "view": []}
        for _ in range(rounds):
            times["native"].append(_time_call(native, array, inner))
            times["flat"].append(_time_call(from_flat, storage, inner))
            times["view"].append(_time_call(mat, storage, inner))
        ratio = [v / m for v, m in zip(times["view"], times["native"], strict=True)]
        ratio_flat = [v / m for v, m in zip(times["view"], times["flat"], strict=True)]
        results.append(
            {
                "op": name,
                "native_us": statistics.median(times["native"]) * 1e6,
                "flat_us": statistics.median(times["flat"]) * 1e6,
                "materialize_us": statistics.median(times["view"]) * 1e6,
                "ratio": statistics.median(ratio),
                "ratio_vs_flat": statistics.median(ratio_flat),
            }
        )
    return results


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=512, help="square matrix side (float32)")
    parser.add_argument("--rounds", type=int, default=15, help="interleaved timing rounds")
    parser.add_argument("--mib", type=float, nargs="+", default=[1, 16])
    parser.add_argument(
        "--full", action="store_true", help="RESULTS.md's size: --n 1024 --rounds 40 --mib 1 16 64"
    )
    args = parser.parse_args(argv)
    if args.full:
        parser.set_defaults(n=1024, rounds=40, mib=[1, 16, 64])
        args = parser.parse_args(argv)
    print(
        f"bench tensor: {'full' if args.full else 'quick'} size (n {args.n}, {args.rounds} rounds, "
        f"transfers of {args.mib} MiB); the full size of benchmarks/RESULTS.md: "
        "`jaxparadigm bench tensor --full` (a few minutes on 2 cores, under 1 GB of memory)",
        flush=True,
    )

    device = jax.devices()[0]
    print("## tensor\n")
    print(
        f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {device.platform} "
        f"({platform.processor() or platform.machine()}, {os.cpu_count()} cores, jax "
        f"{jax.__version__}, 1-min load average {os.getloadavg()[0]:.1f} at start); the machine "
        "is shared with other engineers' jobs while measuring, so absolute times are noisy: "
        "read the ratios (interleaved rounds, medians).\n"
    )
    print(
        f"`View.materialize` vs the native jnp op on the {args.n}x{args.n} float32 array, and vs "
        "the same jnp op applied to the flat storage (`storage.reshape(n, n)` first); all "
        "jitted:\n"
    )
    print(
        "| op | native (us) | native from storage (us) | materialize (us) | ratio "
        "| ratio vs from-storage |"
    )
    print("|----|---:|---:|---:|---:|---:|")
    for r in materialize_ratios(args.n, args.rounds):
        print(
            f"| {r['op']} | {r['native_us']:.1f} | {r['flat_us']:.1f} | "
            f"{r['materialize_us']:.1f} | {r['ratio']:.2f}x | {r['ratio_vs_flat']:.2f}x |"
        )
    print(f"\n`transfer_profile` on {device} (medians of 5):\n")
    print(
        "| size | h2d dispatch (ms) | h2d ready (ms) | dispatch/ready | h2d GB/s | "
        "d2h (ms) | d2h GB/s | zero-copy h2d |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|:---:|")
    for mib in args.mib:
        p = transfer_profile(int(mib * 2**20), device)
        print(
            f"| {mib:g} MiB | {p['h2d_dispatch_s'] * 1e3:.3f} | {p['h2d_ready_s'] * 1e3:.3f} | "
            f"{p['h2d_dispatch_fraction']:.2f} | {p['h2d_gbps']:.2f} | {p['d2h_s'] * 1e3:.3f} | "
            f"{p['d2h_gbps']:.2f} | {p['zero_copy_h2d']} |"
        )


if __name__ == "__main__":
    main()
