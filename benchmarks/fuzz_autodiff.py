"""Generated autodiff programs (issue 23): run N random programs, count comparisons per class.

    python benchmarks/fuzz_autodiff.py --programs 10000 --workers 16 [--seed 0] [--json out.json]
        [--eager all|third|none] [--log run.jsonl]

Program ``k`` is ``tests/autodiff/program_generator.random_program(seed + k)`` (the generator's
program space drawn uniformly), so a run is reproducible and workers split the seeds. Every
transform of ours is compared with
jax's (``tests/autodiff/program_differential.compare_program``: 8 plain transforms and 12 with
options -- has_aux, argnums subsets, chunk_size -- under jit and eagerly, plus vmap of grad). Prints programs, comparisons, counts per class and per transform, seconds, the
CPU model and load, and one example program per distinct non-equal outcome (class, transform, message).
XLA compiles at its lowest optimisation level (every program runs once).

Eager evaluation is the slow part (each primitive of our interpreter is dispatched, and compiled,
one by one: ~75% of a program's time). ``--eager third`` checks eagerly the third of the
transforms the program's seed picks (as ``tests/autodiff/test_generated_programs.py`` does), so
every transform is checked eagerly on a third of the programs; ``--eager none`` checks only
under jit. ``--log FILE`` appends one JSON line per program (seed, counts per class, non-equal
outcomes) as it finishes, so an interrupted run keeps what it measured; ``--resume`` goes on
with the same ``--seed``/``--programs``, skipping the indexes already logged, and
``--summarize FILE`` totals such a log.
"""

from __future__ import annotations

import argparse
import collections
import gc
import json
import multiprocessing as mp
import os
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Every program is compiled once, so compile time is most of a program's time: XLA's lowest
# optimisation level, the legacy elemental emitter for fusions, and one LLVM module per program
# (no parallel codegen split: the workers already fill the cores). One-off checks beside a
# running job, same programs, same outcomes: the fusion emitters off 29.0 vs 34.9-40.6 CPU s
# (8 programs); then the split count 1 at 9.8 vs 12.3 and 25.7 vs 35.3 CPU s (twice 12
# programs). Both sides of every comparison are compiled with the same flags.
FAST_XLA_FLAGS = (
    "--xla_backend_optimization_level=0 --xla_llvm_disable_expensive_passes=true"
    " --xla_cpu_use_fusion_emitters=false --xla_cpu_parallel_codegen_split_count=1"
)


def _worker(job):
    indexes, max_ops, deadline, eager, log = job
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + FAST_XLA_FLAGS).strip()
    if str(ROOT) not in sys.path:
        sys.path.append(str(ROOT))  # after PYTHONPATH: another jaxparadigm may be measured
    from tests.autodiff.program_differential import TRANSFORMS, compare_program
    from tests.autodiff.program_generator import random_program

    # Tracing makes many short-lived objects: the imported modules leave the collector's view
    # and it runs less often (one-off check, same 12 programs twice each: 17.5-18.7 vs 19.4 CPU s).
    gc.collect()
    gc.freeze()
    gc.set_threshold(50_000, 50, 1_000)

    counts, per_transform, failures, programs_run = collections.Counter(), {}, {}, [0]

    def run():
        for index in indexes:
            if deadline is not None and time.time() > deadline:
                break  # --max-seconds: the programs run so far are reported
            program = random_program(index, max_ops=max_ops)
            programs_run[0] += 1
            picked = {
                "all": TRANSFORMS,
                "third": TRANSFORMS[program.seed % 3 :: 3],
                "none": (),
            }[eager]
            t0 = time.process_time()
            outcomes = compare_program(program, eager=picked)
            if log is not None:
                line = {
                    "index": index,  # random_program(index) is this program
                    "seed": program.seed,
                    "cpu_s": round(time.process_time() - t0, 3),
                    "classes": dict(collections.Counter(o.cls for o in outcomes)),
                    "not_equal": [
                        [o.cls, o.transform, o.jit, o.detail[:200]]
                        for o in outcomes
                        if o.cls != "equal"
                    ],
                    "program": repr(program),
                }
                with open(log, "a") as fh:
                    fh.write(json.dumps(line) + "\n")
            for o in outcomes:
                counts[o.cls] += 1
                key = f"{o.transform}{'/jit' if o.jit else ''}"
                per_transform.setdefault(key, collections.Counter())[o.cls] += 1
                if o.cls != "equal":  # failures, refusals and jax's own refusals, by cause
                    sig = f"{o.cls} | {o.transform} | {o.detail[:120]}"
                    failures.setdefault(sig, [0, repr(program)])[0] += 1

    if indexes:
        run()
    return programs_run[0], counts, per_transform, failures


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _load() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--programs", type=int, default=100)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-ops", type=int, default=6)
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument(
        "--max-seconds", type=float, default=None, help="stop starting new programs after this"
    )
    ap.add_argument("--eager", choices=("all", "third", "none"), default="all")
    ap.add_argument("--log", type=Path, default=None, help="append one JSON line per program")
    ap.add_argument(
        "--resume",
        action="store_true",
        help="skip the program indexes already in --log (a run cut short goes on where it was)",
    )
    ap.add_argument("--summarize", type=Path, default=None, help="total a --log file and exit")
    a = ap.parse_args(argv)
    if a.summarize is not None:
        return summarize(a.summarize)
    if a.programs < 1 or a.workers < 1:
        raise SystemExit(f"--programs={a.programs} and --workers={a.workers} must be >= 1")
    pending = list(range(a.seed, a.seed + a.programs))
    if a.resume:
        if a.log is None:
            raise SystemExit("--resume needs --log FILE (the programs already run are read there)")
        done = _logged_indexes(a.log)
        pending = [i for i in pending if i not in done]
        print(f"--resume: {a.programs - len(pending)} of {a.programs} programs already in {a.log}")
    deadline = None if a.max_seconds is None else time.time() + a.max_seconds
    log = None if a.log is None else str(a.log)
    jobs = [(pending[w :: a.workers], a.max_ops, deadline, a.eager, log) for w in range(a.workers)]
    load_before, t0 = _load(), time.perf_counter()
    if a.workers == 1:
        results = [_worker(jobs[0])]
    else:
        with mp.get_context("spawn").Pool(a.workers) as pool:
            results = pool.map(_worker, jobs)
    seconds = time.perf_counter() - t0
    counts, per_transform, failures, n_programs = collections.Counter(), {}, {}, 0
    for n, c, pt, fl in results:
        n_programs += n
        counts.update(c)
        for k, v in pt.items():
            per_transform.setdefault(k, collections.Counter()).update(v)
        for sig, (k, example) in fl.items():
            failures.setdefault(sig, [0, example])[0] += k
    record = {
        "programs": n_programs,
        "programs_requested": a.programs,
        "comparisons": sum(counts.values()),
        "classes": dict(counts),
        "per_transform": {k: dict(v) for k, v in sorted(per_transform.items())},
        "failures": failures,
        "seconds": round(seconds, 1),
        "workers": a.workers,
        "eager": a.eager,
        "seed": a.seed,
        "cpu": _cpu_model(),
        "cpus": os.cpu_count(),
        "load_before": load_before,
        "load_after": _load(),
    }
    print(json.dumps({k: v for k, v in record.items() if k != "failures"}, indent=1))
    for sig, (k, example) in sorted(failures.items(), key=lambda kv: -kv[1][0]):
        print(f"{k:5d}  {sig}\n       {example}")
    if a.json:
        a.json.write_text(json.dumps(record, indent=1))
    return record


def _logged_indexes(path: Path) -> set:
    """Program indexes already in a ``--log`` file (none if it does not exist yet)."""
    if not path.exists():
        return set()
    lines = (json.loads(t) for t in path.read_text().splitlines() if t.strip())
    return {line["index"] for line in lines if "index" in line}


def summarize(path: Path) -> dict:
    """Totals of a ``--log`` file: programs, comparisons per class, CPU seconds, and each
    distinct non-equal outcome (class, transform, message) with its count and one program."""
    counts, failures, n, cpu, seen = collections.Counter(), {}, 0, 0.0, set()
    for text in path.read_text().splitlines():
        line = json.loads(text)
        if "index" in line:
            if line["index"] in seen:
                continue  # a rerun of the same program index: count each program once
            seen.add(line["index"])
        n += 1
        cpu += line["cpu_s"]
        counts.update(line["classes"])
        for cls, transform, jit, detail in line["not_equal"]:
            sig = f"{cls} | {transform}{'/jit' if jit else ''} | {detail[:120]}"
            failures.setdefault(sig, [0, line["program"]])[0] += 1
    record = {
        "programs": n,
        "indexes": [min(seen), max(seen)] if seen else "not logged",
        "comparisons": sum(counts.values()),
        "classes": dict(counts),
        "cpu_seconds": round(cpu, 1),
    }
    print(json.dumps(record, indent=1))
    for sig, (k, example) in sorted(failures.items(), key=lambda kv: -kv[1][0]):
        print(f"{k:5d}  {sig}\n       {example}")
    return record


if __name__ == "__main__":
    main()
