"""``fsdp_tensor`` on 8 forced CPU devices (C5.2): 100 steps on 4 x 2 and 2 x 4 equal one device's,
with about ``1/8`` of the state per device; checkpoints move between mesh shapes bit for bit; a
restore that cannot be laid out names the config's mesh. Each side runs in a child process
(tests/train/mesh_eight_child.py)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

CHILD = Path(__file__).resolve().parent / "mesh_eight_child.py"
ROOT = str(Path(__file__).resolve().parents[2])


def _child(task: str, out: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "JAX_NUM_CPU_DEVICES"}
    env.update(JAX_PLATFORMS="cpu", PYTHONPATH=ROOT, TQDM_DISABLE="1")
    env["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
    proc = subprocess.run(
        [sys.executable, str(CHILD), task, str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=1500,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_100_steps_on_4x2_and_2x4_equal_one_device(tmp_path):
    got = _child("losses", tmp_path)
    one = got["none"]
    assert len(one["losses"]) == 100 and one["losses"][-1] < 0.8 * one["losses"][0]
    for shape, mesh in (("4x2", {"fsdp": 4, "tensor": 2}), ("2x4", {"fsdp": 2, "tensor": 4})):
        run = got[shape]
        np.testing.assert_allclose(run["losses"], one["losses"], rtol=2e-5, err_msg=shape)
        assert abs(run["eval"] - one["eval"]) <= 2e-5 * abs(one["eval"]), shape
        fig = run["placement"]
        assert fig["mode"] == "fsdp_tensor" and fig["mesh"] == mesh and fig["devices"] == 8
        for key in ("params", "opt_state"):  # ~1/8 each: the leaves under min_size stay whole
            share = fig[f"{key}_bytes_per_device"] / fig[f"{key}_bytes_total"]
            assert 1 / 8 <= share <= 1.25 / 8, (shape, key, share)
        ops = fig["collectives"]
        assert (
            ops["all-gather"]["count"] > 0
            and ops["reduce-scatter"]["count"] + ops["all-reduce"]["count"] > 0
        )


def test_checkpoints_move_between_mesh_shapes_bit_for_bit(tmp_path):
    got = _child("restore", tmp_path)
    two_by_four, four_by_two = "{'fsdp': 2, 'tensor': 4}", "{'fsdp': 4, 'tensor': 2}"
    expected = {
        "4x2 -> one device": ["one device"],
        "one device -> 4x2": [four_by_two],
        "4x2 -> 2x4": [two_by_four],
        "2x4 -> 4x2": [four_by_two],
        "4x2 -> 4x2": [four_by_two],
    }
    for case, meshes in expected.items():
        assert got[case] == {"bitwise": True, "meshes": meshes}, (case, got[case])
    # a run moved 4x2 (steps 1-4) -> 2x4 (5-8) -> one device (9-12) = one uninterrupted run
    assert [r["resumed_from"] for r in got["resumed"]] == [None, 4, 8]
    moved = [x for r in got["resumed"] for x in r["losses"]]
    np.testing.assert_allclose(moved, got["whole"], rtol=2e-5)
    refusal = got["refusal"]
    assert refusal.startswith("CheckpointLayoutError: checkpoint step 6 in "), refusal
    assert "cannot be read into this run's layout (mesh fsdp 2 x tensor 4): RESOURCE_EXHAUSTED" in (
        refusal
    )
    assert refusal.endswith(
        "(the config's layout: train.sharding.mode='fsdp_tensor', train.sharding.tensor=4); "
        "resume it with another train.sharding.mode / train.sharding.tensor"
    ), refusal
