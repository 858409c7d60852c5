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
beside the layout). Before the state was made in its layout the busiest device (device 0) held
2.0 of ``3 P`` in every mode (the model, the state built on device 0 and its placed copy); see
the issue note for the figures.
"""

import pytest
import yaml

from tests.train.live_memory_probe import run_probe

FORMULA = {"zero1": lambda n: (1 + 2 / n) / 3, "fsdp": lambda n: 1 / n}
FORMULA["fsdp_tensor"] = FORMULA["fsdp"]

MODELS = {
    "mlp": {
        "model": {"kind": "mlp", "hidden": [128, 128, 128], "num_outputs": 2},
        "data": {"kind": "spirals", "n_samples": 1024, "noise": 0.05, "batch_size": 64},
        "optim": {"name": "adam", "learning_rate": 0.005},
    },
    "transformer": {
        "model": {
            "kind": "transformer",
            "vocab_size": 256,
            "d_model": 64,
            "num_layers": 2,
            "num_heads": 4,
            "context": 16,
        },
        "data": {"kind": "pydoc_chars", "seq_len": 16, "batch_size": 16},
        "optim": {"name": "adamw", "learning_rate": 0.003},
    },
}


def _config(tmp_path, model: str, mode: str):
    raw = {
        "name": f"{model}_{mode}",
        "out_dir": str(tmp_path),
        "task": "train",
        **MODELS[model],
        "train": {
            "steps": 12,
            "eval_every": 4,
            "log_every": 4,
            "plots": False,
            "checkpoint": {"every": 6, "keep": 2},
            "guard": {"max_bad_steps": 1},
            "faults": {"nan_grads": [8]},  # one bad step: a rollback to checkpoint step 6
            "sharding": {"mode": mode, "min_size": 1, "tensor": 2 if mode == "fsdp_tensor" else 1},
        },
    }
    path = tmp_path / f"{model}_{mode}.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


@pytest.mark.parametrize("mode", ["zero1", "fsdp", "fsdp_tensor"])
@pytest.mark.parametrize("model", ["mlp", "transformer"])
def test_the_busiest_device_holds_what_the_mode_says_on_the_cli_path(tmp_path, model, mode):
    got = run_probe(_config(tmp_path, model, mode), [])
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
