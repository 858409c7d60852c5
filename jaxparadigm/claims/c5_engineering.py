"""Chapter 5 experiments: the engineering checks (C5.1) and readiness numbers (C5.2), run with our
training engine (``jaxparadigm.train``) and retrieval service (``jaxparadigm.retrieval``)."""

from __future__ import annotations

import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from jaxparadigm.claims.c1_retrieval import pydoc_index
from jaxparadigm.claims.ledger import experiment
from jaxparadigm.config import config_from_dict
from jaxparadigm.retrieval.pydoc_queries import PYDOC_QUERIES
from jaxparadigm.train.checkpoint import Checkpointer, CheckpointSignatureError
from jaxparadigm.train.data import drift_report, validate_batch
from jaxparadigm.train.loop import train

# The article's readiness bar (chapter 5): P99 <= 350 ms, QPS >= 12,000, trace completeness >= 99.97%.
ARTICLE_P99_MS = 350.0
ARTICLE_QPS = 12_000.0
ARTICLE_TRACE = 0.9997


def _refused(fn) -> str:
    """The first line of the ValueError ``fn`` raises, or '' when it raises nothing."""
    try:
        fn()
    except ValueError as exc:
        return str(exc).splitlines()[0]
    return ""


@experiment(
    "C5.1", "Validate data, detect drift, sign models, and roll back in seconds when a check fails."
)
def c5_1():
    rng = np.random.default_rng(0)
    schema = {"x": ((None, 2), "float32"), "y": ((None,), "int32", (0, 1))}
    good = {"x": rng.normal(size=(8, 2)).astype(np.float32), "y": np.array([0, 1] * 4, np.int32)}
    ev = {
        "validation_good_batch_error": _refused(lambda: validate_batch(good, schema)),
        "validation_nan_error": _refused(
            lambda: validate_batch({**good, "x": np.full((8, 2), np.nan, np.float32)}, schema)
        ),
        "validation_range_error": _refused(
            lambda: validate_batch({**good, "y": np.full(8, 7, np.int32)}, schema)
        ),
    }
    ref = rng.normal(size=(2000, 3))
    cur = ref.copy()
    cur[:, 1] += 1.0  # feature 1 shifts by one standard deviation
    report = drift_report(ref, cur, threshold=0.2)
    ev.update(
        drift_psi=[float(p) for p in report.psi],
        drift_flagged=list(report.drifted),
        drift_true_shift=[1],
    )

    out = Path(tempfile.mkdtemp(prefix="jaxparadigm-c5-"))
    try:
        cfg = config_from_dict(
            {
                "name": "c5_guard",
                "out_dir": str(out),
                "model": {"hidden": [16], "num_outputs": 1},
                "data": {"kind": "regression", "n_samples": 256, "batch_size": 32},
                "optim": {"learning_rate": 0.01},
                "train": {
                    "steps": 40,
                    "eval_every": 40,
                    "plots": False,
                    "checkpoint": {"every": 10},
                },
            }
        )

        def poison(step, batch):  # steps 21-23 deliver NaN targets
            return {**batch, "y": np.full_like(batch["y"], np.nan)} if 21 <= step <= 23 else batch

        hurt = train(cfg, run_dir=out / "hurt", batch_transform=poison, progress=False)
        clean = train(cfg, run_dir=out / "clean", progress=False)
        ckpt = Checkpointer(out / "clean" / "checkpoints", cfg)
        times = []
        for _ in range(3):
            t0 = time.perf_counter()
            ckpt.restore(clean.state)
            times.append(time.perf_counter() - t0)
        other = config_from_dict({"name": "someone_else"})
        ev.update(
            guard_events=[e.kind for e in hurt.events],
            guard_final_loss=float(hurt.losses[-1]),
            clean_final_loss=float(clean.losses[-1]),
            restore_seconds_median=statistics.median(times),
            signature_mismatch_error=_refused(
                lambda: Checkpointer(out / "clean" / "checkpoints", other).restore(clean.state)
            ),
            signature_error_type=CheckpointSignatureError.__name__,
        )
    finally:
        shutil.rmtree(out, ignore_errors=True)
    ev["not_measured"] = ["feature snapshots", "sandboxed inference", "log attribution"]
    return ev


@c5_1.decide
def _(ev):
    checks = {
        "schema validation": not ev["validation_good_batch_error"]
        and bool(ev["validation_nan_error"])
        and bool(ev["validation_range_error"]),
        "drift detection": ev["drift_flagged"] == ev["drift_true_shift"],
        "signed checkpoints": bool(ev["signature_mismatch_error"]),
        "guard + rollback": "rollback" in ev["guard_events"]
        and np.isfinite(ev["guard_final_loss"])
        and ev["guard_final_loss"] <= 2.0 * ev["clean_final_loss"] + 1e-3,
        "rollback in seconds": ev["restore_seconds_median"] < 5.0,
    }
    failed = [k for k, ok in checks.items() if not ok]
    if failed:
        return "fails", f"these engineering checks did not work: {', '.join(failed)}."
    return "holds", (
        f"Measured: a NaN batch and an out-of-range label were refused by the schema; drift flagged "
        f"exactly the shifted feature (PSI {max(ev['drift_psi']):.2f}); a checkpoint signed (sha256 over "
        f"state + config; HMAC when a key is set) under another config was refused; NaN steps were skipped and the run rolled back "
        f"({ev['guard_events'].count('skip')} skips, {ev['guard_events'].count('rollback')} rollback) "
        f"and ended at loss {ev['guard_final_loss']:.4f} vs {ev['clean_final_loss']:.4f} clean; a restore "
        f"takes {ev['restore_seconds_median']:.2f} s. Not exercised: {', '.join(ev['not_measured'])}."
    )


@experiment(
    "C5.2",
    "A service is ready when measured against hard numbers: P99 latency, QPS, trace completeness.",
)
def c5_2():
    names, texts, index = pydoc_index()
    queries = [q.text for q in PYDOC_QUERIES]
    for q in queries:  # warm-up: compile every length bucket the queries use before measuring
        index.search(q, 5)
    traces, latencies = [], []
    t_start = time.perf_counter()
    for rid, q in enumerate(queries * 2):
        t0 = time.perf_counter()
        hits = index.search(q, 5)
        t1 = time.perf_counter()
        latencies.append((t1 - t0) * 1e3)
        traces.append(
            {
                "request_id": rid,
                "query": q,
                "latency_ms": latencies[-1],
                "top": hits[0][0] if hits else None,
                "n": len(hits),
            }
        )
    single_qps = len(latencies) / (time.perf_counter() - t_start)
    batch = queries[:64]
    index.scores(batch)  # compile the batched shape
    t0 = time.perf_counter()
    index.scores(batch)
    batched_qps = len(batch) / (time.perf_counter() - t0)
    complete = [t for t in traces if t["top"] is not None and t["n"] == 5 and t["latency_ms"] > 0]
    return {
        "requests": len(latencies),
        "p50_ms": float(np.percentile(latencies, 50)),
        "p99_ms": float(np.percentile(latencies, 99)),
        "single_query_qps": single_qps,
        "batched_qps_64": batched_qps,
        "trace_completeness": len(complete) / len(traces),
        "article_thresholds": {
            "p99_ms": ARTICLE_P99_MS,
            "qps": ARTICLE_QPS,
            "trace": ARTICLE_TRACE,
        },
    }


@c5_2.decide
def _(ev):
    th = ev["article_thresholds"]
    best_qps = max(ev["single_query_qps"], ev["batched_qps_64"])
    meets = {
        "P99": ev["p99_ms"] <= th["p99_ms"],
        "QPS": best_qps >= th["qps"],
        "trace completeness": ev["trace_completeness"] >= th["trace"],
    }
    numbers = (
        f"P99 {ev['p99_ms']:.1f} ms (P50 {ev['p50_ms']:.1f}), {ev['single_query_qps']:.0f} QPS one query "
        f"at a time / {ev['batched_qps_64']:.0f} batched by 64, trace completeness "
        f"{ev['trace_completeness']:.2%} over {ev['requests']} requests"
    )
    if all(meets.values()):
        return "holds", f"Our search service meets the article's bar: {numbers}."
    missed = [k for k, ok in meets.items() if not ok]
    return "conditional", (
        f"The numbers are measurable ({numbers}), but whether they pass depends on hardware, model and "
        f"batching that the article's thresholds do not state: on this 2-core CPU the service misses "
        f"{', '.join(missed)} and meets {', '.join(k for k, ok in meets.items() if ok) or 'nothing'}."
    )
