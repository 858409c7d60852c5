"""Every shipped config loads through the strict loader, and names a task this project runs."""

from pathlib import Path

import pytest

from jaxparadigm.app.tasks import TASKS
from jaxparadigm.config import load_config

CONFIGS = sorted((Path(__file__).resolve().parents[2] / "configs").glob("*.yaml"))


def test_the_required_configs_exist():
    names = {p.name for p in CONFIGS}
    assert {
        "default.yaml",
        "mlp_spirals.yaml",
        "charlm_pydoc.yaml",
        "mixed_precision.yaml",
        "overflow.yaml",
    } <= names


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_config_loads(path):
    cfg = load_config(path)
    assert cfg.name == path.stem
    assert cfg.task in TASKS


def test_default_is_a_short_checkpointed_training_run():
    cfg = load_config(CONFIGS[0].parent / "default.yaml")
    assert cfg.task == "train" and cfg.train.steps <= 1000
    assert cfg.train.checkpoint.every > 0 and cfg.train.guard.enabled
