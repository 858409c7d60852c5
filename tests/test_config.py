"""The one config loader: strict typed conversion, dotted-path errors, overrides."""

import dataclasses
from pathlib import Path
from typing import Literal

import pytest
import yaml

from jaxparadigm import config as C
from jaxparadigm.config import build


def _write(tmp_path, data):
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(data) if not isinstance(data, str) else data)
    return path


def test_defaults_and_nested_values(tmp_path):
    cfg = C.load_config(
        _write(
            tmp_path,
            {"name": "x", "optim": {"learning_rate": 0.01, "schedule": {"warmup_steps": 5}}},
        )
    )
    assert cfg.name == "x"
    assert cfg.optim.learning_rate == 0.01
    assert cfg.optim.schedule.warmup_steps == 5
    assert cfg.optim.schedule.name == "constant"
    assert cfg.model.hidden == (64, 64)
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.name = "y"


def test_float_written_without_dot_is_accepted(tmp_path):
    # PyYAML reads 1e-3 (no dot) as a string; a float field still accepts it.
    cfg = C.load_config(_write(tmp_path, "name: x\noptim:\n  learning_rate: 1e-3\n"))
    assert cfg.optim.learning_rate == pytest.approx(1e-3)


@pytest.mark.parametrize(
    "data, path, expected",
    [
        (
            {"name": "x", "optim": {"schedule": {"warmup_steps": "ten"}}},
            "optim.schedule.warmup_steps",
            "int",
        ),
        (
            {"name": "x", "optim": {"schedule": {"warmup_steps": 1.5}}},
            "optim.schedule.warmup_steps",
            "int",
        ),
        ({"name": "x", "train": {"plots": 1}}, "train.plots", "bool"),
        ({"name": "x", "optim": {"clip": {"style": "weird"}}}, "optim.clip.style", "one of"),
        ({"name": "x", "model": {"hidden": [8, "a"]}}, "model.hidden[1]", "int"),
        ({"name": "x", "optim": 3}, "optim", "mapping"),
        ({"name": "x", "optim": {"lr": 0.1}}, "optim.lr", "unknown key"),
        ({"optim": {}}, "name", "required"),
    ],
)
def test_errors_name_the_key_path(tmp_path, data, path, expected):
    with pytest.raises(ValueError) as info:
        C.load_config(_write(tmp_path, data))
    msg = str(info.value)
    assert f"'{path}'" in msg
    assert expected in msg


def test_overrides_parse_yaml_values(tmp_path):
    path = _write(tmp_path, {"name": "x"})
    cfg = C.load_config(
        path, ["optim.learning_rate=3e-4", "model.hidden=[8, 4]", "train.guard.enabled=false"]
    )
    assert cfg.optim.learning_rate == pytest.approx(3e-4)
    assert cfg.model.hidden == (8, 4)
    assert cfg.train.guard.enabled is False


@pytest.mark.parametrize("override", ["novalue", "optim..lr=1", "name.sub=3"])
def test_bad_overrides(tmp_path, override):
    with pytest.raises(ValueError):
        C.load_config(_write(tmp_path, {"name": "x"}), [override])


def test_missing_file_and_non_mapping(tmp_path):
    with pytest.raises(ValueError, match="no such file"):
        C.load_config(tmp_path / "absent.yaml")
    with pytest.raises(ValueError, match="expected a mapping"):
        C.load_config(_write(tmp_path, "- a\n- b\n"))


def test_safe_load_only(tmp_path):
    with pytest.raises(ValueError, match="invalid YAML"):
        C.load_config(_write(tmp_path, "name: !!python/object/apply:os.system ['echo hi']\n"))


def test_to_dict_roundtrip():
    cfg = C.config_from_dict({"name": "x", "model": {"hidden": [3]}})
    again = C.config_from_dict(C.to_dict(cfg))
    assert again == cfg


# --- issue 10: every bad input is one clear ConfigError naming the key path or file ----------

from jaxparadigm.errors import ConfigError, InputError  # noqa: E402


@pytest.mark.parametrize(
    "override, path, expected",
    [
        ("train.steps=-5", "train.steps", "got -5, expected an int in [1, 2147483647]"),
        ("train.steps=0", "train.steps", "got 0, expected an int in [1,"),
        ("train.steps=100000000000000000000000", "train.steps", "in [1, 2147483647]"),
        ("train.steps=1e23", "train.steps", "got '1e23' (str), expected int"),
        ("train.eval_every=0", "train.eval_every", "got 0"),
        ("train.log_every=0", "train.log_every", "got 0"),
        ("train.checkpoint.every=-1", "train.checkpoint.every", "in [0,"),
        ("train.guard.lr_decay_on_rollback=0", "train.guard.lr_decay_on_rollback", "in (0, 1]"),
        ("train.guard.min_lr_scale=0", "train.guard.min_lr_scale", "in [1e-30, 1]"),
        ("mixed_precision.nu_dtypes=[]", "mixed_precision.nu_dtypes", "got 0 item(s)"),
        ("data.batch_size=100000", "data.batch_size", "expected <= data.n_samples // 2 = 1024"),
        ("data.val_fraction=1.5", "data.val_fraction", "in (0, 1)"),
        ("data.val_fraction=0.99", "data.val_fraction", "fewer than one batch"),
        ("name=../../escape", "name", "plain directory name"),
        ("name=a/b", "name", "plain directory name"),
        ("name=..", "name", "plain directory name"),
        ("optim.learning_rate=.nan", "optim.learning_rate", "expected finite float"),
        ("optim.b2=1.0", "optim.b2", "in [0, 1)"),
        ("model.hidden=[8, 0]", "model.hidden[1]", "got 0, expected an int >= 1"),
        ("train.faults.kill_at=200", "train.faults.kill_at", "< train.steps (200)"),
        ("train.distributed.process_id=1", "train.distributed.process_id", "< train.dist"),
        (
            "optim.schedule={name: warmup_cosine_decay, warmup_steps: 9, decay_steps: 9}",
            "optim.schedule.decay_steps",
            "expected > optim.schedule.warmup_steps (9)",
        ),
    ],
)
def test_bad_values_name_the_key(tmp_path, override, path, expected):
    with pytest.raises(ConfigError) as info:
        C.load_config(_write(tmp_path, {"name": "x"}), [override])
    msg = str(info.value)
    assert msg.startswith(f"config key '{path}': ") and expected in msg
    assert "\n" not in msg and isinstance(info.value, InputError)


def test_out_dir_that_is_a_file(tmp_path):
    (tmp_path / "f").write_text("")
    with pytest.raises(ConfigError, match=r"config key 'out_dir': got .* is a file"):
        C.config_from_dict({"name": "x", "out_dir": str(tmp_path / "f")})
    with pytest.raises(ConfigError, match=r"config key 'out_dir': .* is a file"):
        C.config_from_dict({"name": "x", "out_dir": str(tmp_path / "f" / "sub")})
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "x").write_text("")
    with pytest.raises(ConfigError, match=r"config key 'name': got 'x', but .* is a file"):
        C.config_from_dict({"name": "x", "out_dir": str(tmp_path / "runs")})


def test_all_problems_at_once_unknown_keys_first(tmp_path):
    with pytest.raises(ConfigError) as info:
        C.load_config(_write(tmp_path, {"optim": {"learning_rat": 0.1}}))
    lines = str(info.value).splitlines()
    assert lines[0] == f"2 problems in config file '{tmp_path / 'c.yaml'}':"
    assert lines[1:] == [
        "  - config key 'optim.learning_rat': unknown key; did you mean 'optim.learning_rate'?",
        "  - config key 'name': required key is missing (str)",
    ]
    bad = {"name": "x", "train": {"steps": -1, "stepz": 3}, "data": {"noise": "loud"}}
    with pytest.raises(ConfigError) as info:
        C.config_from_dict(bad)
    assert [p.path for p in info.value.problems] == ["train.stepz", "data.noise", "train.steps"]
    assert "did you mean 'train.steps'?" in str(info.value)
    with pytest.raises(ConfigError, match="unknown key; expected one of"):
        C.config_from_dict({"name": "x", "zzz": 1})


def test_duplicate_yaml_keys_are_refused(tmp_path):
    text = "name: x\ntrain:\n  steps: 10\n  log_every: 2\n  steps: 20\n"
    with pytest.raises(ConfigError) as info:
        C.load_config(_write(tmp_path, text))
    msg = str(info.value)
    assert "duplicate key 'steps' at lines 3 and 5" in msg and "c.yaml" in msg
    assert "\n" not in msg
    merged = "base: &b {steps: 3}\nname: x\ntrain:\n  <<: *b\n  log_every: 1\n"
    with pytest.raises(ConfigError, match="config key 'base': unknown key"):
        C.load_config(_write(tmp_path, merged))  # merge keys are not duplicates
    with pytest.raises(ConfigError, match="duplicate key 'a'"):
        C.load_config(_write(tmp_path, {"name": "x"}), ["retrieval={a: 1, a: 2}"])


def test_unreadable_files_are_named(tmp_path):
    with pytest.raises(ConfigError, match=r"config file '.*': is a directory"):
        C.load_config(tmp_path)
    binary = tmp_path / "b.yaml"
    binary.write_bytes(b"name: x\n\xff\xfe\x00\x01")
    with pytest.raises(ConfigError, match=r"config file '.*b.yaml': not a UTF-8 text file"):
        C.load_config(binary)
    nul = tmp_path / "n.yaml"
    nul.write_bytes(b"name: x\x00\n")
    with pytest.raises(ConfigError, match=r"config file '.*n.yaml': invalid YAML"):
        C.load_config(nul)
    locked = _write(tmp_path, {"name": "x"})
    for exc, match in [(PermissionError(13, "no"), "not readable"), (OSError(5, "EIO"), "EIO")]:

        def refuse(self, exc=exc):
            raise exc

        with pytest.MonkeyPatch.context() as mp:  # mode 000 does not stop root, so simulate it
            mp.setattr(Path, "read_bytes", refuse)
            with pytest.raises(ConfigError, match=rf"config file '.*c.yaml': .*{match}"):
                C.load_config(locked)


def test_fields_added_by_others_keep_working():
    """A plain new field (no bounds) converts like the rest; unknown types are a bug."""

    @dataclasses.dataclass(frozen=True)
    class Extra:
        grad: Literal["jax", "jaxparadigm"] = "jax"
        weight: float = 1.0

    problems = []
    assert build(Extra, {"grad": "jaxparadigm"}, "train", problems) == Extra("jaxparadigm")
    build(Extra, {"grad": "x", "weight": "w"}, "train", problems)
    assert [p.path for p in problems] == ["train.grad", "train.weight"]
