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
        assert r["b64 scan"] == "host, list-major"  # 64 <= HOST_QUERIES
        if "faiss recall" in r:  # faiss-cpu installed (the bench extra): the same lists
            assert r["same ids"] == 1.0 and r["faiss recall"] == r["recall"]
    assert (tmp_path / "c.png").stat().st_size > 1000


def test_breakdown_names_the_path_the_batch_took(tmp_path):
    """The host's list-major scan for a batch of up to host_queries, the tiles past it: each
    line's parts are measured times of that path."""
    import numpy as np

    from jaxparadigm.retrieval.index.ivf_build import train_ivf
    from jaxparadigm.retrieval.index.searcher import IndexSearcher

    module = load_benchmark("ivf_bench")
    bench = load_benchmark("index_bench")
    x = module.clustered(600, 16, 40, 0.05, seed=0)
    bench.write_vector_index(tmp_path / "idx", x[:500], shard_rows=256)
    train_ivf(tmp_path / "idx", 8, seed=0, iters=2)
    s = IndexSearcher(tmp_path / "idx")
    s.search_vectors(x[500:], 10, nprobe=3)  # opens the lists
    lines = []
    module.breakdown(s, x[500:], 3, 1, lines)
    s._ivf.host_queries = 0
    module.breakdown(s, x[500:], 3, 1, lines)
    assert (
        "(the host's list-major scan)" in lines[0] and "distinct lists, each read once" in lines[0]
    )
    assert "host plan" in lines[1] and "tiles of" in lines[1] and "list-major" not in lines[1]
    assert all(np.isfinite(float(t.split(" ms")[0].split()[-1])) for t in lines)
