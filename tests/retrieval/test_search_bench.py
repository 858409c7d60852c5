"""Smoke test of benchmarks/search_bench.py on a tiny corpus (issue 26): every method found the
numpy top-10, and each figure is a positive fraction of a limit measured in the same run."""

from tests.benchmark_module import load_benchmark


def test_search_bench_reports_fractions_of_measured_limits(capsys):
    module = load_benchmark("search_bench")
    args = ["--n", "4096", "--rounds", "1", "--no-faiss", "--peak-n", "256"]
    result = module.main([*args, "--dtypes", "float32,int8"])
    out = capsys.readouterr().out
    assert "limits: read bandwidth" in out and "load after" in out
    rows = result["rows"]
    assert set(rows) == {"ours float32", "ours int8", "plain jit(matmul + top_k)"}
    assert rows["ours float32"]["recall"] == 1.0
    assert rows["plain jit(matmul + top_k)"]["recall"] == 1.0
    assert rows["ours int8"]["recall"] >= 0.9  # rescored in float32
    for r in rows.values():
        assert r["qps64"] > 0 and r["qps1"] > 0
        assert r["peak_fraction"] == r["flops64"] / result["flops"]
        read = r["read_gbs"] * 1e9
        assert abs(r["bw_fraction"] * result["bandwidth"] - read) <= 1e-9 * read
