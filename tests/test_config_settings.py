"""The libraries own their settings (issue 33): each config section IS a library settings type,
checked once in ``__post_init__`` with one error naming the key path; the config file is read
once and records which keys the user set."""

import dataclasses
import re

import pytest

import jaxparadigm.config as config_module
from jaxparadigm.build import train_settings
from jaxparadigm.config import Config, TrainConfig, config_from_dict, read_config
from jaxparadigm.errors import ConfigError
from jaxparadigm.optim import (
    OPTIMISERS,
    ClipSettings,
    LossScaleSettings,
    OptimSettings,
    ScheduleSettings,
)
from jaxparadigm.train import (
    CheckpointSettings,
    DataSettings,
    DistributedSettings,
    FaultsSettings,
    GuardSettings,
    ShardingSettings,
    signed_config,
)

SETTINGS = [
    (OptimSettings, "optim", lambda c: c.optim),
    (ClipSettings, "optim.clip", lambda c: c.optim.clip),
    (ScheduleSettings, "optim.schedule", lambda c: c.optim.schedule),
    (LossScaleSettings, "optim.loss_scale", lambda c: c.optim.loss_scale),
    (DataSettings, "data", lambda c: c.data),
    (GuardSettings, "train.guard", lambda c: c.train.guard),
    (CheckpointSettings, "train.checkpoint", lambda c: c.train.checkpoint),
    (ShardingSettings, "train.sharding", lambda c: c.train.sharding),
    (DistributedSettings, "train.distributed", lambda c: c.train.distributed),
    (FaultsSettings, "train.faults", lambda c: c.train.faults),
]


@pytest.mark.parametrize("cls, path, section", SETTINGS, ids=lambda x: getattr(x, "__name__", x))
def test_the_config_section_is_the_library_type(cls, path, section):
    cfg = Config(name="x")
    assert type(section(cfg)) is cls
    assert section(cfg) == cls()  # one set of defaults
    assert cls.PATH == path


# (type, field, bad value, error type, text of the expectation)
BAD = [
    (GuardSettings, "max_bad_steps", 0, ValueError, "expected an int >= 1"),
    (GuardSettings, "lr_decay_on_rollback", 2.0, ValueError, "expected a float in (0, 1]"),
    (GuardSettings, "min_lr_scale", 0.0, ValueError, "expected a float in [1e-30, 1]"),
    (GuardSettings, "max_bad_steps", True, TypeError, "expected int"),
    (GuardSettings, "enabled", 1, TypeError, "expected bool"),
    (CheckpointSettings, "every", 2.5, TypeError, "expected int"),
    (CheckpointSettings, "keep", 0, ValueError, "expected an int >= 1"),
    (ShardingSettings, "mode", "ddp", ValueError, "expected one of 'none', 'data'"),
    (ShardingSettings, "min_size", 0, ValueError, "expected an int >= 1"),
    (DataSettings, "batch_size", -5, ValueError, "expected an int >= 1"),
    (DataSettings, "seed", 2**32, ValueError, "expected an int in [0, 4294967295]"),
    (DataSettings, "noise", float("nan"), TypeError, "expected finite float"),
    (DistributedSettings, "num_processes", 0, ValueError, "expected an int >= 1"),
    (DistributedSettings, "coordinator_address", 5, TypeError, "expected str or null"),
    (FaultsSettings, "nan_batch", (1, -1), ValueError, "expected an int in [0, 2147483646]"),
    (FaultsSettings, "kill_at", "3", TypeError, "expected int or null"),
    (FaultsSettings, "nan_grads", [1], TypeError, "expected list of int"),
    (OptimSettings, "learning_rate", -1.0, ValueError, "expected a float >= 0"),
    (OptimSettings, "b2", 1.0, ValueError, "expected a float in [0, 1)"),
    (OptimSettings, "name", "adamax", ValueError, "expected one of 'adam', 'adamw'"),
    (OptimSettings, "mu_dtype", "int8", ValueError, "expected one of 'float32'"),
    (OptimSettings, "clip", {"style": "none"}, TypeError, "expected mapping (ClipSettings)"),
    (ScheduleSettings, "decay_steps", 0, ValueError, "expected an int in [1, 2147483647]"),
    (LossScaleSettings, "init_scale", 0.5, ValueError, "expected a float >= 1"),
]


@pytest.mark.parametrize("cls, name, value, err, expected", BAD)
def test_a_bad_field_is_one_error_naming_its_key_path(cls, name, value, err, expected):
    with pytest.raises(err) as info:
        cls(**{name: value})
    assert type(info.value) is err
    message = str(info.value)
    assert re.match(rf"{re.escape(cls.PATH)}\.{name}(\[\d+\])?: got ", message), message
    assert message.endswith(expected) or expected in message
    assert "\n" not in message


@pytest.mark.parametrize("cls, name, value, err, expected", BAD[:12])
def test_from_a_config_the_same_field_is_a_config_error_with_its_key_path(
    cls, name, value, err, expected
):
    path = f"{cls.PATH}.{name}"
    raw: dict = {"name": "x"}
    node = raw
    for part in path.split(".")[:-1]:
        node = node.setdefault(part, {})
    node[name] = value
    with pytest.raises(ConfigError, match=f"config key '{path}'"):
        config_from_dict(raw)


def test_good_values_pass_and_ints_are_accepted_for_floats():
    assert GuardSettings(lr_decay_on_rollback=1).lr_decay_on_rollback == 1
    assert FaultsSettings(nan_batch=(0, 3), kill_at=None).nan_batch == (0, 3)
    assert OptimSettings(mu_dtype="bfloat16", name="lion").name == "lion"
    assert dataclasses.replace(GuardSettings(), max_bad_steps=5).max_bad_steps == 5
    with pytest.raises(
        ValueError, match=r"^train\.guard\.max_bad_steps: got 0, expected an int >= 1$"
    ):
        dataclasses.replace(GuardSettings(), max_bad_steps=0)


def test_optimiser_names_are_derived_from_the_registry():
    hint = OptimSettings.__dataclass_fields__["name"].type
    assert "OneOf" in str(hint)
    for name in OPTIMISERS:
        assert OptimSettings(name=name).name == name


def test_train_settings_hands_the_sections_over_by_keyword():
    cfg = config_from_dict(
        {"name": "x", "train": {"guard": {"max_bad_steps": 7}, "checkpoint": {"every": 4}}}
    )
    s = train_settings(cfg)
    assert s.guard is cfg.train.guard and s.guard.max_bad_steps == 7
    assert s.checkpoint is cfg.train.checkpoint and s.checkpoint.every == 4
    assert s.sharding is cfg.train.sharding
    assert s.signed == signed_config(cfg)


def test_the_train_section_defaults_are_the_libraries():
    t = TrainConfig()
    assert t.guard == GuardSettings() and t.checkpoint == CheckpointSettings()


def test_read_config_reads_the_file_once_and_records_the_keys_set(tmp_path, monkeypatch):
    path = tmp_path / "c.yaml"
    path.write_text("name: c\ntrain:\n  sharding:\n    min_size: 4\n")
    reads = []
    real = config_module._read_text
    monkeypatch.setattr(config_module, "_read_text", lambda p: reads.append(p) or real(p))
    loaded = read_config(path, ["train.steps=3"])
    assert len(reads) == 1
    assert loaded.sets("train.sharding.min_size") and loaded.sets("train.steps")
    assert loaded.sets("train.sharding") and not loaded.sets("train.sharding.mode")
    assert not loaded.sets("optim")
    again = loaded.with_overrides("train.sharding.mode=data")
    assert len(reads) == 1  # no second read
    assert again.train.sharding.mode == "data" and again.train.steps == 3
    assert again.train.sharding.min_size == 4
    assert loaded.config.train.sharding.mode == "none"


@pytest.mark.parametrize(
    "cls, field, value, key, problem",
    [
        (GuardSettings, "max_bad_steps", 0, "max_bad_steps", "got 0, expected an int >= 1"),
        (OptimSettings, "b2", 1.0, "b2", "got 1.0, expected a float in [0, 1)"),
        (
            FaultsSettings,
            "nan_batch",
            (1, -1),
            "nan_batch[1]",
            "got -1, expected an int in [0, 2147483646]",
        ),
    ],
)
def test_a_bound_is_applied_one_way_by_the_settings_and_the_loader(cls, field, value, key, problem):
    """fields.bounds_problem words the refusal for both: the same text after the key path."""
    with pytest.raises(ValueError) as built:
        cls(**{field: value})
    assert str(built.value) == f"{cls.PATH}.{key}: {problem}"
    raw: dict = {"name": "x"}
    node = raw
    for part in cls.PATH.split("."):
        node = node.setdefault(part, {})
    node[field] = list(value) if isinstance(value, tuple) else value
    with pytest.raises(ConfigError) as loaded:
        config_from_dict(raw)
    assert str(loaded.value) == f"config key '{cls.PATH}.{key}': {problem}"


def test_a_numpy_scalar_is_stored_as_the_python_number_it_equals():
    import numpy as np

    guard = GuardSettings(max_bad_steps=np.int64(4), lr_decay_on_rollback=np.float32(0.5))
    assert guard.max_bad_steps == 4 and type(guard.max_bad_steps) is int
    assert type(guard.lr_decay_on_rollback) is float
    assert FaultsSettings(nan_batch=(np.int32(2),)).nan_batch == (2,)
    with pytest.raises(
        TypeError, match=r"^train\.guard\.max_bad_steps: got np\.True_, expected int$"
    ):
        GuardSettings(max_bad_steps=np.bool_(True))
