"""Smoke test of benchmarks/optim_bench.py on a tiny problem (slow: seven compilations)."""

import json

import pytest

from tests.benchmark_module import load_benchmark


@pytest.mark.slow
def test_bench_runs_and_reports_fractions_of_the_triad(tmp_path):
    module = load_benchmark("optim_bench")
    out = tmp_path / "bench.json"
    args = ["--params", "5000", "--leaves", "5", "--reps", "2", "--runs", "2", "--no-torch"]
    result = module.main([*args, "--json", str(out)])
    assert json.loads(out.read_text())["params"] == 5000
    assert result["ours_adam_program_identical_to_optax"] is True
    assert len(result["runs"]) == 2
    run = result["runs"][0]
    assert set(run["variants"]) == {
        "triad",
        "ours adam",
        "ours adam (update_step)",
        "optax adam",
        "ours adam (flat buffer)",
        "optax.flatten(ours adam)",
        "ours chain (clip+schedule+adam)",
        "ours chain (update_step)",
        "optax chain (clip+schedule+adam)",
    }
    triad = run["variants"]["triad"]
    assert triad["xla_bytes_per_param"] == pytest.approx(12.0)  # read a, b; write a
    adam = run["variants"]["ours adam"]
    # XLA:CPU's single-output loops: m', v', then p' reading m', v' (10 float32 accesses).
    assert adam["xla_bytes_per_param"] == pytest.approx(40.0, rel=0.01)
    assert adam["loop_fusions"] >= 3 * 5
    assert run["variants"]["ours adam (flat buffer)"]["loop_fusions"] < adam["loop_fusions"]
    fraction = adam["effective_GBps"] / run["triad_GBps"]
    assert adam["fraction_of_triad"] == pytest.approx(fraction)
    assert all(v > 0 for v in run["ratios"].values())
