"""What a device holds during ``jaxparadigm run`` with a sharded state (C4.1, C5.2).

The command line itself (``jaxparadigm.cli.main(["run", ...])`` in a fresh process with 8 forced
CPU devices) runs under the live-buffer sampler of ``tests/train/live_memory_probe.py``: a sample
at every return of a function of the run's code (set-up, each stage of each step, evaluation, the
rollback a NaN-gradient fault forces, checkpoint save and restore, the report on the returned
``TrainResult``) and at each replica slice orbax stages for a checkpoint. The busiest device's
distinct live bytes over the whole run, as a fraction of the state's ``3 P`` (parameters ``P``,
Adam's two moments), must match the mode's formula within 15%::

    zero1         (P + 2 P / n) / 3 P   = 0.417 on n = 8 devices
    fsdp          (P / n + 2 P / n) / 3 P = 1 / n = 0.125
    fsdp_tensor   1 / n (a 4 x 2 mesh: every leaf split over both axes, or over one of them)

and no device may hold a single-device array with a parameter's full shape (an unsharded copy
beside the layout). The figures, before and after the state was made in its layout, are in
docs/guides/mesh.md with the command that prints them (``live_memory_probe.py --table``).
"""

import pytest

from tests.train.live_memory_probe import FORMULA, run_probe, write_config

# CI's time: every mode on the MLP and the transformer's 2-D mesh run in CI's full run; the
# transformer's zero1 and fsdp (the same sharding code as the MLP's) with -m slow.
_SLOW = pytest.mark.slow


@pytest.mark.parametrize(
    "model, mode",
    [
        ("mlp", "zero1"),
        ("mlp", "fsdp"),
        ("mlp", "fsdp_tensor"),
        pytest.param("transformer", "zero1", marks=_SLOW),
        pytest.param("transformer", "fsdp", marks=_SLOW),
        ("transformer", "fsdp_tensor"),
    ],
)
def test_the_busiest_device_holds_what_the_mode_says_on_the_cli_path(tmp_path, model, mode):
    got = run_probe(write_config(tmp_path, model, mode), [])
    n, state = got["devices"], 3 * got["params_bytes"]
    assert got["status"] == 0 and n == 8
    assert got["samples"] > 100  # every stage of 12 steps, 2 saves, a restore, the report
    share = got["busiest_bytes"] / state
    want = FORMULA[mode](n)
    assert abs(share - want) <= 0.15 * want, (share, want, got["busiest_where"])
    # every device is at its peak within the same bound: no device carries the run's extras
    peaks = [v / state for v in got["peak_per_device"].values()]
    assert len(peaks) == n and min(peaks) >= 0.85 * want
    full = {tuple(s) for s in got["shapes"]}
    unsharded = [c for c in got["copies"] if tuple(c["shape"]) in full]
    assert unsharded == [], unsharded
    rolled = (tmp_path / f"{model}_{mode}" / "metrics.jsonl").read_text()
    assert '"event": "rollback"' in rolled  # the restore path ran
