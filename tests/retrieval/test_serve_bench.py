"""Smoke test of benchmarks/serve_bench.py (issue 37, C5.2): a tiny run of the whole script, the
service under 1 and 2 clients, gives figures and complete traces (marked ci_full: it loads MiniLM
and builds a two-topic pydoc index)."""

import json

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
    assert set(result["ratios"]) == {"pydoc ours q/s(2)/q/s(1)"}
