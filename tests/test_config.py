"""The one config loader: strict typed conversion, dotted-path errors, overrides."""

import dataclasses

import pytest
import yaml

from jaxparadigm import config as C


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
