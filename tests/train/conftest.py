"""Tiny configs shared by the train tests (small MLP on spirals, a few dozen steps)."""

import pytest

from jaxparadigm.config import config_from_dict


def tiny_config(out_dir, name="tiny", **sections):
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
    return config_from_dict(raw)


@pytest.fixture
def make_config(tmp_path):
    return lambda **kw: tiny_config(tmp_path, **kw)
