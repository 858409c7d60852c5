"""Tiny configs shared by the train tests (small MLP on spirals, a few dozen steps)."""

import os
from pathlib import Path

import pytest
import yaml

from jaxparadigm.config import config_from_dict


def tiny_raw(out_dir, name="tiny", **sections) -> dict:
    """The raw mapping of a tiny config (a section given here updates the default's keys)."""
    raw = {
        "name": name,
        "out_dir": str(out_dir),
        "model": {"kind": "mlp", "hidden": [16]},
        "data": {"kind": "spirals", "n_samples": 320, "batch_size": 32, "noise": 0.05},
        "optim": {"learning_rate": 0.01},
        "train": {"steps": 30, "eval_every": 10, "log_every": 5, "plots": False},
    }
    for key, value in sections.items():
        raw[key] = {**raw.get(key, {}), **value} if isinstance(value, dict) else value
    return raw


def tiny_regression_raw(out_dir, name="tiny", steps=30, **train) -> dict:
    """A tiny regression MLP run as a raw mapping (for YAML files run by a subprocess)."""
    return tiny_raw(
        out_dir,
        name,
        model={"num_outputs": 1},
        data={"kind": "regression"},
        train={"steps": steps, **train},
    )


def damaged_checkpoint_run(tmp_path):
    """``(config path, env)`` for a CLI run that must refuse a damaged checkpoint: a tiny run
    saved step 4 under ``tmp_path/dm``, its state files were deleted, and the YAML asks for 8
    steps, so the run tries to resume from the unreadable step 4 (issues 24 #18, 25)."""
    from jaxparadigm.build import train_from_config

    raw = tiny_regression_raw(tmp_path, "dm", steps=4, checkpoint={"every": 4})
    train_from_config(config_from_dict(raw), progress=False)
    for d in (tmp_path / "dm" / "checkpoints" / "4" / "state").rglob("d"):
        for f in d.iterdir():
            f.unlink()
    path = tmp_path / "dm.yaml"
    path.write_text(yaml.safe_dump({**raw, "train": {**raw["train"], "steps": 8}}))
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "PYTHONPATH": str(Path.cwd())}
    return path, env


def tiny_config(out_dir, name="tiny", **sections):
    return config_from_dict(tiny_raw(out_dir, name, **sections))


@pytest.fixture
def make_config(tmp_path):
    return lambda **kw: tiny_config(tmp_path, **kw)
