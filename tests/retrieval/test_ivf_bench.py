"""Smoke test of benchmarks/ivf_bench.py on a tiny clustered corpus (issue 38): the curve's
figures come from searches that found what the exact search found."""

from tests.benchmark_module import load_benchmark


def test_ivf_bench_curve_on_a_tiny_corpus(capsys, tmp_path):
    module = load_benchmark("ivf_bench")
    args = ["--n", "3000", "--dim", "32", "--lists", "16", "--single", "2", "--repeats", "1"]
    plot = str(tmp_path / "c.png")
    result = module.main([*args, "--nprobe", "1", "16", "--compare", "--plot", plot])
    out = capsys.readouterr().out
    assert (
        out.startswith("bench ivf: quick size") and "`train_ivf`" in out and "load average" in out
    )
    rows = {r["nprobe"]: r for r in result["curve"]["clustered"]}
    assert set(rows) == {1, 16}
    assert rows[16]["recall"] == 1.0  # every list probed: the exact search
    assert 0 < rows[1]["recall"] <= 1.0
    for r in rows.values():
        assert r["ours b1"] > 0 and r["ours b64"] > 0
        assert r["same as row-major"] is True and r["row-major b64"] > 0  # --compare
        assert r["list-major b1"] > 0 and r["list-major b64"] > 0  # its like-for-like side
        assert r["G"] in (1, 4, 8, 16)
        if "faiss recall" in r:  # faiss-cpu installed (the bench extra): the same lists
            assert r["same ids"] == 1.0 and r["faiss recall"] == r["recall"]
    assert (tmp_path / "c.png").stat().st_size > 1000
