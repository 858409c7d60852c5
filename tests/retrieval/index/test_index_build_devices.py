"""Smoke test of benchmarks/index_build_devices.py (issue 26): each K builds the same index in a
process of its own, and K=2's embeddings are K=1's (measured, not assumed: a difference shows)."""

from tests.benchmark_module import load_benchmark


def test_bench_builds_per_device_count_and_compares_embeddings(tmp_path, capsys):
    module = load_benchmark("index_build_devices")
    for i in range(40):  # 40 passages: two micro-batches of 32, one per device with K=2
        (tmp_path / f"d{i:02d}.txt").write_text(f"Item {i}: " + "text " * (2 + i % 5))
    record = module.main([str(tmp_path), "--cpu-devices", "1,2", "--rounds", "1"])
    out = capsys.readouterr().out
    assert "indexed 40 passages in" in out and "on 2 CPU devices" in out and "load after" in out
    one, two = record["rows"]
    assert (one["devices"], two["devices"]) == (1, 2)
    assert one["max_abs_diff"] is None and two["max_abs_diff"] == 0.0
    assert one["median_s"] > 0 and two["median_s"] > 0
