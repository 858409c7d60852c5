"""Where the host scan of a small batch stops paying (``IVFSearcher.host_queries``, issue 49).

    python benchmarks/ivf_host_crossover.py [--n 200000] [--lists 1024] [--nprobe 16 64]
                                            [--batches 1 2 4 8 16] [--repeats 5]
                                            [--queries 64] [--devices 1]

Clustered unit rows (``ivf_bench.clustered``: ``10 * lists`` centres, sigma 0.05), k-means
lists (``train_ivf``), then per ``nprobe`` and batch size the same queries searched by one
``IVFSearcher`` with ``host_queries`` = the batch (the host scan:
``jaxparadigm.retrieval.dense.ivf_host_scan``) and 0 (the device's tiles), interleaved medians
of ``repeats`` rounds of 64 queries in batches of that size; the two results' ids and scores are
checked equal. A third column, ``host, device probe``, is the host scan with its lists chosen by
the device's probe program (``HOST_PROBE_QUERIES`` set to 0), as before the host probe: the
probe's share of a small batch's time, in the same rounds; only up to ``HOST_PROBE_QUERIES``
queries (a larger batch is probed by the device's program in both columns: "-"). Its results
are not compared: the two probes may choose differently where two lists' scores round apart. ``--devices N``: the device scan on
``N`` CPU devices (as ``--cpu-devices N`` gives the CLI; its ``auto`` is one per core). FAISS ``IndexIVFFlat`` with the same
centroids (when installed) at the same batch size beside them. Prints one Markdown table with the CPU, load at start and end.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from index_bench import cpu_info, interleaved, write_vector_index  # noqa: E402
from ivf_bench import clustered, faiss_ivf  # noqa: E402


def main(argv: list[str] | None = None) -> list[dict]:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--n", type=int, default=200_000)
    p.add_argument("--dim", type=int, default=384)
    p.add_argument("--lists", type=int, default=1024)
    p.add_argument("--nprobe", type=int, nargs="+", default=[16, 64])
    p.add_argument("--batches", type=int, nargs="+", default=[1, 2, 4, 8, 16])
    p.add_argument("--queries", type=int, default=64)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--devices", type=int, default=1)
    args = p.parse_args(argv)
    if "jax" not in sys.modules:  # a run of its own (a caller's JAX keeps its devices)
        from jaxparadigm.app.cpu_devices import with_cpu_devices

        os.environ["XLA_FLAGS"] = with_cpu_devices(os.environ, args.devices)["XLA_FLAGS"]
    import jax

    import jaxparadigm.retrieval.dense.ivf_search as ivf_search
    from jaxparadigm.retrieval.dense.ivf_search import IVFSearcher
    from jaxparadigm.retrieval.index.ivf_build import train_ivf
    from jaxparadigm.retrieval.index.searcher import IndexSearcher

    try:
        import faiss
    except ImportError:
        faiss = None
    load0 = os.getloadavg()[0]
    x = clustered(args.n + args.queries, args.dim, 10 * args.lists, 0.05, seed=0)
    q, x = x[args.n :], x[: args.n]
    tmp = Path(tempfile.mkdtemp(prefix="ivf_host_"))
    write_vector_index(tmp / "idx", x, shard_rows=131072)
    train_ivf(tmp / "idx", args.lists, seed=0, iters=5)
    ivf = IndexSearcher(tmp / "idx").index.ivf
    devices = jax.devices()[: args.devices]
    if len(devices) != args.devices:
        raise SystemExit(f"--devices {args.devices}: JAX started with {len(devices)} devices")
    s = IVFSearcher(ivf.centroids, ivf.offsets, ivf.ids, ivf.rows, devices=devices)
    fx = faiss_ivf(faiss, np.asarray(ivf.centroids), x)[0] if faiss is not None else None
    host_probes, rows = ivf_search.HOST_PROBE_QUERIES, []
    for nprobe in args.nprobe:
        for b in args.batches:
            parts = [q[a : a + b] for a in range(0, len(q) - b + 1, b)]

            def run(host, parts=parts, b=b, nprobe=nprobe, device_probe=False):
                s.host_queries = host
                ivf_search.HOST_PROBE_QUERIES = 0 if device_probe else host_probes
                try:
                    return [s.search(part, 10, nprobe) for part in parts]
                finally:
                    ivf_search.HOST_PROBE_QUERIES = host_probes

            got_h, got_d = run(b), run(0)
            same = all(
                np.array_equal(h.ids, d.ids) and np.array_equal(h.scores, d.scores)
                for h, d in zip(got_h, got_d, strict=True)
            )
            fns = {"host": lambda b=b: run(b), "device": lambda: run(0)}
            if b <= host_probes:
                fns["host_dprobe"] = lambda b=b: run(b, device_probe=True)
            if fx is not None:
                fx.nprobe = nprobe
                fns["faiss"] = lambda parts=parts: [fx.search(part, 10) for part in parts]
            t = interleaved(fns, args.repeats)
            n_q = sum(len(part) for part in parts)
            row = {"nprobe": nprobe, "batch": b, "same": same}
            row |= {name: n_q / v for name, v in t.items()}
            rows.append(row)
    load1 = os.getloadavg()[0]
    head = (
        "| nprobe | batch | host q/s | host, device probe q/s | host/(device probe) | "
        "device q/s | host/device | equal |"
    )
    rule = "|---|---|---|---|---|---|---|---|"
    if fx is not None:
        head += " FAISS q/s | host/FAISS | device/FAISS |"
        rule += "---|---|---|"
    print(
        f"ivf_host_crossover: {args.n:,} x {args.dim}, {args.lists} lists, {args.queries} "
        f"queries, device scan on {args.devices} CPU device(s), medians of {args.repeats}; "
        f"{cpu_info()}; load {load0:.2f} -> {load1:.2f}"
    )
    print(head)
    print(rule)
    for r in rows:
        dprobe = "- | -"
        if "host_dprobe" in r:
            dprobe = f"{r['host_dprobe']:.0f} | {r['host'] / r['host_dprobe']:.2f}x"
        line = (
            f"| {r['nprobe']} | {r['batch']} | {r['host']:.0f} | {dprobe} | {r['device']:.0f} | "
            f"{r['host'] / r['device']:.2f}x | {r['same']} |"
        )
        if fx is not None:
            line += f" {r['faiss']:.0f} | {r['host'] / r['faiss']:.2f}x | "
            line += f"{r['device'] / r['faiss']:.2f}x |"
        print(line)
    import shutil

    shutil.rmtree(tmp, ignore_errors=True)
    return rows


if __name__ == "__main__":
    main()
