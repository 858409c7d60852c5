"""Smoke tests of benchmarks/serve_bench.py (issue 37, C5.2) and benchmarks/serve_budget.py (issue
49): a tiny run of each whole script, the service under 1 and 2 clients, gives figures and complete
traces (marked ci_full: they load MiniLM and build a two-topic pydoc index)."""

import json
import os

import pytest

from tests.benchmark_module import load_benchmark


@pytest.mark.ci_full
def test_serve_bench_tiny_run(tmp_path, capsys):
    module = load_benchmark("serve_bench")
    args = ["--clients", "1,2", "--seconds", "0.5", "--no-reference", "--topics", "2"]
    out = tmp_path / "serve.json"
    module.main([*args, "--cache-dir", str(tmp_path / "cache"), "--out", str(out)])
    text = capsys.readouterr().out
    assert text.startswith("bench serve: quick size") and "load average" in text
    assert "| pydoc |" in text and "reference left out (--no-reference)" in text
    result = json.loads(out.read_text())
    rows = result["rows"]
    assert [(r["server"], r["clients"]) for r in rows] == [("ours", 1), ("ours", 2)]
    for r in rows:
        assert r["qps"] > 0 and r["errors"] == 0 and r["requests"] > 0
        assert r["p99_ms"] >= r["p50_ms"] > 0
        assert r["complete"] == 1.0
        assert r["server_cpu_ms"] > 0 and r["client_cpu_ms"] > 0  # each process's own CPU
    assert "CPU ms/request server + client" in text
    assert set(result["ratios"]) == {"pydoc ours q/s(2)/q/s(1)"}


@pytest.mark.ci_full
def test_serve_budget_tiny_run(tmp_path, capsys):
    """benchmarks/serve_budget.py: every part measured, the bound computed from the figures."""
    module = load_benchmark("serve_budget")
    args = ["--clients", "1,2", "--seconds", "0.5", "--rounds", "1", "--calls", "2"]
    out = tmp_path / "budget.json"
    module.main([*args, "--topics", "2", "--cache-dir", str(tmp_path / "cache"), "--out", str(out)])
    text = capsys.readouterr().out
    result = json.loads(out.read_text())
    for part in ("encode", "encode_one_core"):
        assert sorted(map(int, result[part])) == [1, 2, 4, 8, 16]
        assert all(v["wall_ms"] > 0 and v["cpu_ms"] >= 0 for v in result[part].values())
    for part in ("lookup", "minilm"):
        assert sorted(map(int, result[part])) == [1, 2]
        assert all(r["qps"] > 0 and r["errors"] == 0 for r in result[part].values())
    lookup, minilm = result["lookup"]["2"], result["minilm"]["2"]
    assert lookup["encode_ms"] < minilm["encode_ms"]  # a lookup is no model run
    svc = lookup["server_cpu_ms"] + lookup["client_cpu_ms"]
    per_query = result["encode"]["16"]["cpu_ms"] / 16
    bound = len(os.sched_getaffinity(0)) * 1e3 / (per_query + svc)  # the batch-16 bound
    assert "Contention:" in text and text.count("Bound at") == 4
    assert f"+ {svc:.2f} ms) = {bound:.0f} q/s" in text
