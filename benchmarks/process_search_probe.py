"""What splitting an exact search over jax.distributed processes costs and gives (issue 37).

    python benchmarks/process_search_probe.py [--rows 1000000] [--rounds 5]

Writes an index of ``--rows`` random unit rows (384 float32) in 16 shards, then times, in
interleaved rounds (median of each):

* one process searching every shard on 2 CPU devices (the reference), and
* a 2-process group (``launch_workers``, 1 CPU device each, each holding half the shards),

for batches of 1 and 64 queries, plus the group's fixed cost per step on a 1,600-row index
(collectives: header, queries, top-k, passages). Prints q/s, the ratio, per-process VmHWM, the
bytes each step moves, and the machine (CPU model, cores, load). The group runs on this one
machine, so its processes share its cores: a scaling figure needs one host per process.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

TIMER = r"""
import json, sys, time
import numpy as np
from jaxparadigm.retrieval.index.searcher import IndexSearcher
from jaxparadigm.train.distributed import DistributedSettings, initialize_distributed
initialize_distributed(DistributedSettings())
import jax
index, queries, rounds, out = sys.argv[1], np.load(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
s = IndexSearcher(index)
times = {}
for batch in (1, 64):
    s.search_vectors(queries[:batch], 10)  # compile
    runs = []
    for _ in range(rounds):
        t = time.perf_counter()
        for i in range(0, 64, batch):
            s.search_vectors(queries[i : i + batch], 10)
        runs.append((time.perf_counter() - t) / 64)
    times[batch] = runs
hwm = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM"))
if jax.process_index() == 0:
    json.dump({"times": times, "hwm_kib": hwm, "devices": len(s.vectors.devices)}, open(out, "w"))
"""


def machine() -> str:
    model = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor(),
    )
    return f"{model}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}"


def timed(tmp: Path, index: Path, q: Path, rounds: int, group: bool) -> dict:
    from jaxparadigm.train.launch import launch_workers

    out = tmp / f"t{time.monotonic_ns()}.json"
    cmd = [sys.executable, "-c", TIMER, str(index), str(q), str(rounds), str(out)]
    if group:
        launch_workers(cmd, tmp / "run", num_processes=2, devices_per_process=1, timeout_s=900)
    else:
        env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=2"}
        subprocess.run(cmd, check=True, env=env, timeout=900)
    return json.loads(out.read_text())


def main(argv: list[str] | None = None) -> None:
    from index_bench import write_vector_index

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--rounds", type=int, default=5)
    args = p.parse_args(argv)
    print(f"process_search_probe: {args.rows:,} rows x 384; {machine()}")
    tmp = Path(tempfile.mkdtemp(prefix="process_search_probe_"))
    rng = np.random.default_rng(0)
    q = rng.standard_normal((64, 384)).astype(np.float32)
    np.save(tmp / "q.npy", q / np.linalg.norm(q, axis=1, keepdims=True))
    for label, rows in (("fixed cost", 1_600), ("scan", args.rows)):
        x = rng.standard_normal((rows, 384)).astype(np.float32)
        x /= np.linalg.norm(x, axis=1, keepdims=True)
        index = tmp / f"idx{rows}"
        write_vector_index(index, x, rows // 16)
        del x
        runs = {False: [], True: []}
        for _ in range(2):  # interleaved: alone, group, alone, group
            for group in (False, True):
                runs[group].append(timed(tmp, index, tmp / "q.npy", args.rounds, group))
        for batch in ("1", "64"):
            alone = statistics.median(t for r in runs[False] for t in r["times"][batch])
            split = statistics.median(t for r in runs[True] for t in r["times"][batch])
            print(
                f"  {label:10s} {rows:>9,} rows, batch {batch:>2}: one process {1 / alone:8.1f} "
                f"q/s, 2 processes {1 / split:8.1f} q/s ({alone / split:.2f}x); per query "
                f"{1e3 * alone:.2f} vs {1e3 * split:.2f} ms"
            )
        print(
            f"  {label:10s} VmHWM: one process {runs[False][0]['hwm_kib'] / 1024:.0f} MiB, "
            f"each of 2: {runs[True][0]['hwm_kib'] / 1024:.0f} MiB (process 0)"
        )
    print(
        f"  step bytes per query: broadcast 4*384 = 1,536; top-k gather 2 * 10 * 8 = 160; done "
        f"at load {os.getloadavg()[0]:.2f}"
    )


if __name__ == "__main__":
    main()
