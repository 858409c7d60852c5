"""Smoke test of benchmarks/ivf_host_crossover.py on a tiny corpus (issue 49): the host and the
device scans it times give equal results, and every figure is a measured rate."""

from tests.benchmark_module import load_benchmark


def test_host_crossover_tiny_run(capsys):
    module = load_benchmark("ivf_host_crossover")
    args = ["--n", "2000", "--dim", "16", "--lists", "8", "--nprobe", "2", "8"]
    rows = module.main([*args, "--batches", "1", "3", "--queries", "6", "--repeats", "1"])
    assert [(r["nprobe"], r["batch"]) for r in rows] == [(2, 1), (2, 3), (8, 1), (8, 3)]
    for r in rows:
        assert r["same"] is True and r["host"] > 0 and r["device"] > 0 and r["host_dprobe"] > 0
    out = capsys.readouterr().out
    assert out.startswith("ivf_host_crossover: 2,000 x 16, 8 lists") and "load" in out
    assert sum(line.startswith("|") for line in out.splitlines()) == 2 + len(rows)  # head, rule
