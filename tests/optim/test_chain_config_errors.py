"""chain_for / schedule_for refuse bad config values with errors naming the config key path."""

from pathlib import Path

import pytest

from jaxparadigm.config import (
    ClipConfig,
    LossScaleConfig,
    OptimConfig,
    ScheduleConfig,
    config_from_dict,
    load_config,
)
from jaxparadigm.errors import ConfigError
from jaxparadigm.optim import chain_for, schedule_for


@pytest.mark.parametrize(
    "optim, path",
    [
        ({"learning_rate": -1.0}, "optim.learning_rate"),
        ({"b1": 1.0}, "optim.b1"),
        ({"eps": 0.0}, "optim.eps"),
        ({"weight_decay": -0.1}, "optim.weight_decay"),
        ({"clip": {"max_norm": 0.0}}, "optim.clip.max_norm"),
        ({"schedule": {"name": "linear", "decay_steps": 0}}, "optim.schedule.decay_steps"),
        ({"schedule": {"name": "cosine_decay", "decay_steps": 0}}, "optim.schedule.decay_steps"),
        ({"schedule": {"name": "cosine_decay", "alpha": 2.0}}, "optim.schedule.alpha"),
        (
            {"schedule": {"name": "warmup_cosine_decay", "warmup_steps": 50, "decay_steps": 10}},
            "optim.schedule.decay_steps",
        ),
        ({"schedule": {"name": "linear_lr", "total_iters": 0}}, "optim.schedule.total_iters"),
        ({"schedule": {"warmup_steps": -1}}, "optim.schedule.warmup_steps"),
        (
            {"loss_scale": {"enabled": True, "growth_interval": 0}},
            "optim.loss_scale.growth_interval",
        ),
    ],
)
def test_bad_values_name_the_key_path(optim, path):
    # The config loader refuses these values itself, naming the key path.
    with pytest.raises(ConfigError, match=path.replace(".", r"\.")):
        config_from_dict({"name": "x", "optim": optim})
    # Built directly (bypassing the loader), the settings types refuse a bound when built, and
    # chain_for / schedule_for refuse a relation between fields when they use them.
    sections = {"clip": ClipConfig, "schedule": ScheduleConfig, "loss_scale": LossScaleConfig}
    for build in (chain_for, schedule_for):
        with pytest.raises(ValueError, match=path.replace(".", r"\.")):
            kw = {k: sections[k](**v) if k in sections else v for k, v in optim.items()}
            build(OptimConfig(**kw))


def test_unknown_storage_dtype_is_a_config_error():
    with pytest.raises(ValueError, match="'optim.nu_dtype'"):
        config_from_dict({"name": "x", "optim": {"nu_dtype": "float64"}})


# The repo's configs/, whatever the working directory (a relative glob found none elsewhere).
CONFIGS = sorted((Path(__file__).resolve().parents[2] / "configs").glob("*.yaml"))


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_every_shipped_config_builds_its_chain(path):
    cfg = load_config(path)
    chain_for(cfg.optim)
    assert float(schedule_for(cfg.optim)(0)) >= 0.0
