"""Tiny configs shared by the train tests (small MLP on spirals, a few dozen steps)."""

import pytest

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


def tiny_config(out_dir, name="tiny", **sections):
    return config_from_dict(tiny_raw(out_dir, name, **sections))


@pytest.fixture
def make_config(tmp_path):
    return lambda **kw: tiny_config(tmp_path, **kw)
