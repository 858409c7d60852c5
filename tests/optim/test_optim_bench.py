"""Smoke test of benchmarks/optim_bench.py on a tiny problem (slow: four compilations)."""

import importlib.util
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "optim_bench.py"


@pytest.mark.slow
def test_bench_runs_and_reports_ratios(tmp_path):
    spec = importlib.util.spec_from_file_location("optim_bench", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = tmp_path / "bench.json"
    result = module.main(
        ["--params", "5000", "--leaves", "5", "--reps", "2", "--no-torch", "--json", str(out)]
    )
    assert out.exists()
    assert result["ours_adam_program_identical_to_optax"] is True
    assert set(result["median_ms"]) == {
        "ours adam",
        "optax adam",
        "ours chain (clip+schedule+adam)",
        "optax chain (clip+schedule+adam)",
    }
    assert all(v > 0 for v in result["ratios"].values())
