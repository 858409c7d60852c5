"""Smoke test of benchmarks/search_dtype_probe.py on a tiny corpus (issue 26): every kernel is
timed for every dtype and batch, and each fraction is the figure over the limit measured in the
same round (batch 64: FLOP/s over peak; batch 1: bytes of the stored dtype over read bandwidth)."""

from tests.benchmark_module import load_benchmark


def test_probe_times_every_kernel_as_a_fraction_of_a_measured_limit(capsys):
    module = load_benchmark("search_dtype_probe")
    n = 9000  # not a multiple of the scan's 8,192-row blocks: scan dot pads
    record = module.main(["--n", str(n), "--rounds", "1", "--repeats", "1"])
    out = capsys.readouterr().out
    assert "round 1: read bandwidth" in out and "load after" in out
    (limits,) = record["limits"]
    seen = {(r["batch"], r["dtype"], r["kernel"]) for r in record["rows_out"]}
    compact = ("dot native", "bf16 hi+lo", "scan dot", "ours")
    want = {(b, "float32", k) for b in (64, 1) for k in ("dot native", "scan dot", "ours")}
    want |= {(b, d, k) for b in (64, 1) for d in ("bfloat16", "int8") for k in compact}
    want |= {(b, "bfloat16", "ours, convert") for b in (64, 1)}
    assert seen == want
    width = {"float32": 4, "bfloat16": 2, "int8": 1}
    for r in record["rows_out"]:
        if r["batch"] > 1:
            want_fraction = 2 * r["batch"] * n * 384 / r["s"] / limits["peak_flops"]
        else:
            want_fraction = width[r["dtype"]] * n * 384 / r["s"] / limits["read_bandwidth"]
        assert abs(r["fraction"] - want_fraction) <= 1e-9 * want_fraction
