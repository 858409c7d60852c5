"""The 8-device side of tests/train/test_mesh_eight_devices.py: run as a script in a process with
8 forced CPU devices, ``python mesh_eight_child.py losses|restore OUT_DIR``; prints one JSON line.

``losses``: a tiny transformer trained 100 steps with ``train.sharding.mode`` ``none`` (one
device) and ``fsdp_tensor`` on 4 x 2 and 2 x 4: the loss curves, final evaluations and placement
figures. ``restore``: a state trained on 4 x 2 and checkpointed, read back into the layouts of one
device, 2 x 4 and 4 x 2 (and a 2 x 4 save read on 4 x 2, a one-device save on 4 x 2), each leaf
compared bit for bit; a run resumed across shapes (4 x 2 -> 2 x 4 -> one device) against an
uninterrupted one; and the refusal when a restore cannot be laid out (orbax's read made to fail
as out of memory).
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

ROOT = str(Path(__file__).resolve().parents[2])
LM = {
    "model": {"kind": "transformer", "d_model": 64, "num_layers": 2, "num_heads": 4, "context": 16},
    "data": {"kind": "pydoc_chars", "seq_len": 16, "batch_size": 16},
    "optim": {"name": "adamw", "learning_rate": 0.003},
}


def _config(out: str, name: str, tensor: int | None, **train):
    from jaxparadigm.config import config_from_dict

    sharding = {"mode": "none"} if tensor is None else {"mode": "fsdp_tensor", "tensor": tensor}
    raw = {"name": name, "out_dir": out, **LM}
    raw["train"] = {
        "eval_every": 50,
        "log_every": 10,
        "plots": False,
        "sharding": sharding,
        **train,
    }
    return config_from_dict(raw)


def losses(out: str) -> dict:
    from jaxparadigm.build import train_from_config

    got = {}
    for name, tensor in (("none", None), ("4x2", 2), ("2x4", 4)):
        r = train_from_config(_config(out, name, tensor, steps=100), progress=False)
        got[name] = {"losses": r.losses, "eval": r.final_eval["loss"], "placement": r.placement}
    return got


def _template(cfg, tensor: int | None):
    """A fresh state of ``cfg``'s model in the layout of ``tensor`` (None: one device)."""
    from flax import nnx

    from jaxparadigm.build import build_model, dataset_for, train_settings
    from jaxparadigm.optim import chain_for
    from jaxparadigm.train.initial_state import initial_state
    from jaxparadigm.train.settings import ShardingSettings

    sharding = ShardingSettings(mode="fsdp_tensor", tensor=tensor) if tensor else ShardingSettings()
    settings = dataclasses.replace(train_settings(cfg), sharding=sharding)
    variables = nnx.split(build_model(cfg.model, dataset_for(cfg), 0))[1]
    return initial_state(variables, chain_for(cfg.optim), settings)[0]


def _same(a, b) -> bool:
    import jax
    import numpy as np

    from jaxparadigm.train.sharding import to_host

    left, right = jax.tree_util.tree_leaves(to_host(a)), jax.tree_util.tree_leaves(to_host(b))
    if len(left) != len(right):
        return False
    pairs = zip(left, right, strict=True)
    return all(x.dtype == y.dtype and np.array_equal(x, y) for x, y in pairs)


def _meshes(state) -> list:
    import jax

    found = {str(dict(getattr(x.sharding, "mesh", None).shape)) if hasattr(x.sharding, "mesh")
             else "one device" for x in jax.tree_util.tree_leaves(state)}  # fmt: skip
    return sorted(found)


def restore(out: str) -> dict:
    from jaxparadigm.build import train_from_config
    from jaxparadigm.train.checkpoint import Checkpointer

    cfg = _config(out, "saved", 2, steps=6, checkpoint={"every": 6})
    saved = train_from_config(cfg, progress=False).state  # 4 x 2, checkpoint step 6
    ck = Checkpointer(Path(out) / "saved" / "checkpoints", cfg)
    result: dict = {}
    for name, tensor in (("one device", None), ("2x4", 4), ("4x2", 2)):
        got = ck.restore(_template(cfg, tensor))
        result[f"4x2 -> {name}"] = {"bitwise": _same(got, saved), "meshes": _meshes(got)}
        if tensor is None or tensor == 4:  # and back onto 4 x 2 from there
            other = Checkpointer(Path(out) / f"from_{tensor}", cfg)
            other.save(got)
            back = other.restore(_template(cfg, 2))
            result[f"{name} -> 4x2"] = {"bitwise": _same(back, saved), "meshes": _meshes(back)}
            other.close()
    resumed = []
    for steps, tensor in ((4, 2), (8, 4), (12, None)):  # 4x2, then 2x4, then one device
        r = train_from_config(
            _config(out, "moving", tensor, steps=steps, checkpoint={"every": 4}), progress=False
        )
        resumed.append({"resumed_from": r.resumed_from, "losses": r.losses})
    whole = train_from_config(_config(out, "whole", None, steps=12), progress=False)
    result["resumed"] = resumed
    result["whole"] = whole.losses
    result["refusal"] = _refusal(out)
    ck.close()
    return result


def _refusal(out: str) -> str:
    """The refusal of a restore whose read into the 2 x 4 layout fails (made to fail as an
    out-of-memory error of the device), through the run's resume path."""
    import orbax.checkpoint as ocp

    from jaxparadigm.build import train_from_config

    def fail(*args, **kwargs):
        raise RuntimeError("RESOURCE_EXHAUSTED: Out of memory allocating 49152 bytes")

    restore_fn = ocp.CheckpointManager.restore
    ocp.CheckpointManager.restore = fail
    try:
        cfg = _config(out, "saved", 4, steps=12, checkpoint={"every": 6})
        train_from_config(cfg, progress=False)
    except Exception as err:  # the refusal under test
        return f"{type(err).__name__}: {err}"
    finally:
        ocp.CheckpointManager.restore = restore_fn
    return "no refusal"


if __name__ == "__main__":
    sys.path.insert(0, ROOT)
    import jax

    assert jax.device_count() == 8, jax.devices()
    task, out = sys.argv[1], sys.argv[2]
    print(json.dumps(losses(out) if task == "losses" else restore(out)))
