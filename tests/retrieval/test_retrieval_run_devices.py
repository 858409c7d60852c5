"""Smoke test of benchmarks/retrieval_run_devices.py (issue 26): each K runs the retrieval task in a
process of its own, records how many devices encoded, and K=2's rankings are K=1's (compared,
not assumed)."""

import json

from tests.benchmark_module import load_benchmark


def test_bench_runs_per_device_count_and_compares_rankings(capsys):
    module = load_benchmark("retrieval_run_devices")
    topics = json.dumps(["pass", "break", "continue", "lambda", "await"])
    overrides = [f"retrieval.topics={topics}", "retrieval.chunk_words=60"]
    record = module.main(["--cpu-devices", "1,2", "--rounds", "1", *overrides])
    out = capsys.readouterr().out
    assert "K=1 " in out and "on 2 device(s)" in out and "load after" in out
    one, two = record["rows"]
    assert (one["devices"], two["devices"]) == (1, 2)
    assert one["same_as_first"] is None and two["same_as_first"] is True
    assert min(one["wall_s"], one["encode_s"], two["wall_s"], two["encode_s"]) > 0
