"""``jaxparadigm run configs/retrieval.yaml --cpu-devices K`` for each K, as a user runs it (issue 26).

    python benchmarks/retrieval_run_devices.py [--config configs/retrieval.yaml] [--cpu-devices 1,2]
        [--rounds 3] [KEY=VALUE ...]

Each run is a new process (``python -m jaxparadigm run CONFIG KEY=VALUE ... out_dir=TMP
--cpu-devices K``; the overrides are passed on, e.g. ``retrieval.topics=[...]`` for a smaller
run) with an empty ``XDG_CACHE_HOME``, so the passage index is encoded again every time (no
cache hit): JAX's start, the model load and every compilation are in the wall time, as in a
user's first run. Reported per K: the median wall time and the median of the run's own ``semantic_seconds``
(all MiniLM encoding and scoring, from ``metrics.json``), with ``encode_devices`` as the run
recorded it; for each K after the first, whether every ranking and metric equals the first K's
(the encoder's micro-batches on several devices give the one-device embeddings bit for bit).
Rounds rotate the order of the Ks by one. ``XLA_FLAGS`` and ``JAX_NUM_CPU_DEVICES`` are removed
from the runs' environment so that ``--cpu-devices`` decides. CPU model, flags and the 1-minute
load average before and after are printed.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from index_build_devices import command_env  # noqa: E402 - the benchmarks folder is not a package
from search_bench import _load, cpu_info  # noqa: E402

#: metrics.json keys that must not depend on the device count (timings and the count do)
SAME = ("results", "per_query", "seed_example", "n_passages", "n_topics", "n_queries")


def run(config: str, overrides: list[str], tmp: Path, devices: int) -> tuple[float, dict]:
    """Wall seconds of one ``run`` process on ``devices`` CPU devices, and its metrics.json."""
    out, cache = tmp / f"runs{devices}", tmp / f"cache{devices}"
    for d in (out, cache):
        shutil.rmtree(d, ignore_errors=True)
    env = {**command_env(), "XDG_CACHE_HOME": str(cache)}
    argv = [sys.executable, "-m", "jaxparadigm", "run", config, *overrides, f"out_dir={out}"]
    argv += ["--cpu-devices", str(devices)]
    t0 = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, cwd=HERE.parent)
    seconds = time.perf_counter() - t0
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {done.returncode}:\n{done.stderr[-3000:]}")
    report = Path(done.stdout.strip().splitlines()[-1].removeprefix("report: "))
    return seconds, json.loads((report.parent / "metrics.json").read_text(encoding="utf-8"))


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default="configs/retrieval.yaml")
    ap.add_argument("--cpu-devices", default="1,2", help="comma-separated counts, e.g. 1,2")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("overrides", nargs="*", help="key.path=value overrides for every run")
    a = ap.parse_args(argv)
    counts = [int(c) for c in a.cpu_devices.split(",")]
    if not counts or min(counts) < 1 or a.rounds < 1:
        raise SystemExit(f"--cpu-devices {a.cpu_devices!r} --rounds {a.rounds}: expected >= 1")
    print(
        f"run {a.config} {' '.join(a.overrides)} on K CPU devices; CPU: {cpu_info()}; load {_load()}"
    )
    wall: dict[int, list[float]] = {k: [] for k in counts}
    encode: dict[int, list[float]] = {k: [] for k in counts}
    devices: dict[int, int] = {}
    same: dict[int, bool] = {}
    with tempfile.TemporaryDirectory() as tmp:
        first: dict | None = None
        for r in range(a.rounds):
            for k in counts[r % len(counts) :] + counts[: r % len(counts)]:
                s, m = run(a.config, a.overrides, Path(tmp), k)
                wall[k].append(s)
                encode[k].append(m["semantic_seconds"])
                devices[k] = m["encode_devices"]
                picked = {key: m[key] for key in SAME}
                if k == counts[0]:
                    first = picked
                elif first is not None:
                    same[k] = same.get(k, True) and picked == first
                print(
                    f"round {r + 1}: K={k} {s:.1f} s wall, encoding {m['semantic_seconds']:.1f} s "
                    f"on {m['encode_devices']} device(s)",
                    flush=True,
                )
    record: dict = {"config": a.config, "overrides": a.overrides, "rounds": a.rounds, "rows": []}
    base_wall, base_enc = statistics.median(wall[counts[0]]), statistics.median(encode[counts[0]])
    for k in counts:
        w, e = statistics.median(wall[k]), statistics.median(encode[k])
        extra = f", rankings and metrics equal to K={counts[0]}'s: {same[k]}" if k in same else ""
        print(
            f"K={k}: encode_devices {devices[k]}, median wall {w:.1f} s ({base_wall / w:.2f}x), "
            f"median encoding {e:.1f} s ({base_enc / e:.2f}x K={counts[0]}'s speed){extra}"
        )
        record["rows"].append(
            {"devices": k, "wall_s": w, "encode_s": e, "same_as_first": same.get(k)}
        )
    print(f"load after: {_load()}")
    return record


if __name__ == "__main__":
    main()
