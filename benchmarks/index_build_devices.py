"""``jaxparadigm index build --cpu-devices K`` wall time for each K, as a user runs it (issue 26).

    python benchmarks/index_build_devices.py [PATH ...] [--cpu-devices 1,2] [--rounds 3]

Each build is a new process (``python -m jaxparadigm index build PATH ... --out TMP
--cpu-devices K --no-progress``): JAX's start, the model load and every compilation are in the
figure, as they are in a user's run. Rounds rotate the order of the Ks by one; the medians of the
wall times are reported, with the command's own summary line (passages, its timer) and, for
each K after the first, the largest absolute difference of its embeddings from the first K's
(the encoder's micro-batches on several devices must give the one-device numbers). ``XLA_FLAGS``
and ``JAX_NUM_CPU_DEVICES`` are removed from the builds' environment so that ``--cpu-devices``
decides. CPU model, flags and the 1-minute load average before and after are printed.
Default PATH: the repository's ``docs`` folder.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from search_bench import _load, cpu_info  # noqa: E402 - the benchmarks folder is not a package


def command_env() -> dict[str, str]:
    """This process's environment for a ``python -m jaxparadigm`` child: no ``XLA_FLAGS`` or
    ``JAX_NUM_CPU_DEVICES`` (``--cpu-devices`` decides the count), this checkout first on
    ``PYTHONPATH``."""
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "JAX_NUM_CPU_DEVICES")}
    env["PYTHONPATH"] = os.pathsep.join([str(HERE.parent), env.get("PYTHONPATH", "")]).rstrip(
        os.pathsep
    )
    return env


def build(paths: list[str], out: Path, devices: int) -> tuple[float, str]:
    """Seconds of one ``index build`` process on ``devices`` CPU devices, and its summary line."""
    env = command_env()
    argv = [sys.executable, "-m", "jaxparadigm", "index", "build", *paths, "--out", str(out)]
    argv += ["--cpu-devices", str(devices), "--no-progress"]
    t0 = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {done.returncode}:\n{done.stderr[-3000:]}")
    return seconds, done.stdout.splitlines()[0]


def embeddings(index_dir: Path) -> np.ndarray:
    """Every shard's embeddings, in row order."""
    shards = sorted(index_dir.glob("shard_*.npy"))
    return np.concatenate([np.load(s) for s in shards])


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="*", default=[str(HERE.parent / "docs")])
    ap.add_argument("--cpu-devices", default="1,2", help="comma-separated counts, e.g. 1,2")
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args(argv)
    counts = [int(c) for c in a.cpu_devices.split(",")]
    if not counts or min(counts) < 1 or a.rounds < 1:
        raise SystemExit(f"--cpu-devices {a.cpu_devices!r} --rounds {a.rounds}: expected >= 1")
    print(f"index build on K CPU devices: {a.paths}; CPU: {cpu_info()}; load {_load()}")
    times: dict[int, list[float]] = {k: [] for k in counts}
    lines: dict[int, str] = {}
    diff: dict[int, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        first = None
        for r in range(a.rounds):
            order = counts[r % len(counts) :] + counts[: r % len(counts)]
            for k in order:
                out = Path(tmp) / f"idx{k}"
                shutil.rmtree(out, ignore_errors=True)
                s, lines[k] = build(a.paths, out, k)
                times[k].append(s)
                emb = embeddings(out)
                if k == counts[0]:
                    first = emb
                elif first is not None:
                    diff[k] = max(diff.get(k, 0.0), float(np.max(np.abs(emb - first))))
                print(f"round {r + 1}: K={k} {s:.1f} s wall; {lines[k]}", flush=True)
    record = {"paths": a.paths, "rounds": a.rounds, "rows": []}
    base = statistics.median(times[counts[0]])
    for k in counts:
        med = statistics.median(times[k])
        extra = f", max |emb - K={counts[0]}| {diff[k]:.1e}" if k in diff else ""
        print(
            f"K={k}: median {med:.1f} s wall over {a.rounds} rounds "
            f"({base / med:.2f}x K={counts[0]}'s speed){extra}"
        )
        record["rows"].append({"devices": k, "median_s": med, "max_abs_diff": diff.get(k)})
    print(f"load after: {_load()}")
    return record


if __name__ == "__main__":
    main()
