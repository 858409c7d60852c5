"""``train(model, dataset, tx, settings)`` refuses bad library arguments with ONE clear error
(issue 34): the settings types check their fields when built, ``train`` its arguments' types, the
run directory and the batch size against the dataset, before anything runs. Every keyword option
of ``train`` and ``train_from_config`` (generated from the tables below, which must cover their
signatures) is refused by name and value before any step; ``train_from_config`` takes a mapping
through the config loader (issue 47)."""

import dataclasses
from pathlib import Path

import optax
import pytest

from jaxparadigm.build import build_model
from jaxparadigm.config import ModelConfig
from jaxparadigm.train import (
    CheckpointSettings,
    DataSettings,
    GuardSettings,
    TrainSettings,
    build_dataset,
    train,
)
from tests.train.conftest import tiny_raw


@pytest.fixture(scope="module")
def parts():
    """A tiny dataset, model, optimiser and settings that train (checked by the last test)."""
    dataset = build_dataset(DataSettings(n_samples=64, batch_size=8))
    model = build_model(ModelConfig(hidden=(4,)), dataset, 0)
    return dataset, model, optax.sgd(0.1)


def _settings(tmp_path: Path, **kw) -> TrainSettings:
    base = {"name": "t", "run_dir": tmp_path / "run", "steps": 2, "batch_size": 8}
    base.update(eval_every=1, log_every=1, plots=False)
    return TrainSettings(**{**base, **kw})


@pytest.mark.parametrize(
    "field, value, err, text",
    [
        ("steps", -5, ValueError, "settings.steps: got -5, expected an int in [1, 2147483647]"),
        ("eval_every", 0, ValueError, "settings.eval_every: got 0, expected an int in [1, "),
        ("eval_every", -1, ValueError, "settings.eval_every: got -1, expected an int in [1, "),
        (
            "seed",
            2**32,
            ValueError,
            "settings.seed: got 4294967296, expected an int in [0, 4294967295]",
        ),
        ("faults", None, TypeError, "settings.faults: got None, expected FaultPlan"),
        (
            "grad",
            "torch",
            ValueError,
            "settings.grad: got 'torch', expected one of 'jax', 'jaxparadigm'",
        ),
        ("run_dir", "runs/x", TypeError, "settings.run_dir: got 'runs/x', expected Path"),
        ("guard", {"enabled": True}, TypeError, "settings.guard: got {'enabled': True}, expected "),
    ],
)
def test_bad_settings_fields_are_refused_when_built(tmp_path, field, value, err, text):
    with pytest.raises(err) as info:
        _settings(tmp_path, **{field: value})
    assert type(info.value) is err and str(info.value).startswith(text)


def test_bad_guard_and_checkpoint_values_are_refused_when_built():
    with pytest.raises(
        ValueError,
        match=r"^train\.guard\.lr_decay_on_rollback: got 2\.0, expected a float in \(0, 1\]$",
    ):
        GuardSettings(lr_decay_on_rollback=2.0)
    with pytest.raises(TypeError, match=r"^train\.checkpoint\.every: got 2\.5, expected int$"):
        CheckpointSettings(every=2.5)


def test_a_wrong_argument_type_is_one_type_error(tmp_path, parts):
    dataset, model, tx = parts
    s = _settings(tmp_path)
    cases = [
        ((model, None, tx, s), "dataset: got NoneType, expected a jaxparadigm.train.Dataset"),
        ((model, dataset, optax.adam, s), "tx: got function, expected an optax"),
        (
            (model, dataset, tx, dataclasses.asdict(s)),
            "settings: got dict, expected a jaxparadigm.train.TrainSettings",
        ),
        ((None, dataset, tx, s), "model: got NoneType, expected a flax.nnx.Module"),
    ]
    for args, text in cases:
        with pytest.raises(TypeError) as info:
            train(*args, progress=False)
        assert str(info.value).startswith(text), info.value
    assert not (tmp_path / "run").exists()  # refused before anything was written


def test_the_uncalled_optimiser_is_named(tmp_path, parts):
    dataset, model, _ = parts
    with pytest.raises(TypeError, match=r"call it, e\.g\. optax\.adam\(1e-3\)"):
        train(model, dataset, optax.adam, _settings(tmp_path), progress=False)


def test_a_run_dir_that_is_a_file_is_refused(tmp_path, parts):
    dataset, model, tx = parts
    (tmp_path / "run").write_text("not a directory")
    with pytest.raises(ValueError, match=r"settings\.run_dir=.*: is a file, expected a directory"):
        train(model, dataset, tx, _settings(tmp_path), progress=False)


def test_a_batch_size_that_is_not_the_dataset_s_is_refused(tmp_path, parts):
    dataset, model, tx = parts
    with pytest.raises(ValueError, match=r"settings\.batch_size=16: expected 8, the dataset's"):
        train(model, dataset, tx, _settings(tmp_path, batch_size=16), progress=False)


def test_good_arguments_train(tmp_path, parts):
    dataset, model, tx = parts
    result = train(model, dataset, tx, _settings(tmp_path), progress=False)
    assert len(result.losses) == 2


# Every keyword argument of train (and of train_from_config) with values it must refuse at once.
BAD_OPTIONS = {
    "lr_fn": [3, "cosine"],
    "loss_scale": ["x", 2.0, {"init_scale": 8.0}],
    "stop_at": ["3", -1, True],
    "batch_transform": [3],
    "progress": ["yes", 1, None],
    "write_plots": ["no", 0],
    "plot": [5, "plots"],
}
BAD_PARTS = {"dataset": [{"n_samples": 8}], "tx": ["adam"], "run_dir": [5]}
OPTION_CASES = [(name, v) for name, values in BAD_OPTIONS.items() for v in values]


def test_the_tables_cover_every_keyword_argument():
    """A new argument of train / train_from_config fails here until it has bad values below."""
    import inspect

    from jaxparadigm.build import train_from_config

    def keywords(fn):
        return {n for n, p in inspect.signature(fn).parameters.items() if p.kind is p.KEYWORD_ONLY}

    assert keywords(train) == set(BAD_OPTIONS)
    assert keywords(train_from_config) == (set(BAD_OPTIONS) - {"loss_scale"}) | set(BAD_PARTS)


@pytest.mark.parametrize("name, value", OPTION_CASES, ids=[f"{n}={v!r}" for n, v in OPTION_CASES])
def test_a_bad_option_is_one_error_before_any_step(tmp_path, parts, name, value):
    """``train(lr_fn=3)``, ``loss_scale="x"``, ``plot=5`` ... : one TypeError/ValueError naming
    the argument and the value, raised before any step ran (``plot=5`` failed only after every
    step, and the result was lost) and before the run directory was made."""
    dataset, model, tx = parts
    calls = []
    kwargs = {"progress": False, "batch_transform": lambda s, b: calls.append(s) or b, name: value}
    with pytest.raises((TypeError, ValueError)) as info:
        train(model, dataset, tx, _settings(tmp_path), **kwargs)
    assert str(info.value).startswith(f"{name}: got "), info.value
    assert repr(value) in str(info.value)
    assert calls == [] and not (tmp_path / "run").exists()


CONFIG_CASES = [c for c in OPTION_CASES if c[0] != "loss_scale"]  # from the config there
CONFIG_CASES += [(n, v) for n, values in BAD_PARTS.items() for v in values]


@pytest.mark.parametrize("name, value", CONFIG_CASES, ids=[f"{n}={v!r}" for n, v in CONFIG_CASES])
def test_train_from_config_refuses_a_bad_argument_before_building(tmp_path, name, value):
    from jaxparadigm.build import train_from_config

    with pytest.raises((TypeError, ValueError)) as info:
        train_from_config(tiny_raw(tmp_path), **{"progress": False, name: value})
    assert str(info.value).startswith(f"{name}: got "), info.value
    assert not (tmp_path / "tiny").exists()


def test_train_from_config_takes_a_mapping_through_the_config_loader(tmp_path, monkeypatch):
    """A mapping is built by the config loader: the run gets the settings (and optimiser shape)
    the loaded Config gives; a bad field is the loader's ConfigError; a str is one TypeError."""
    import jaxparadigm.build as build
    from jaxparadigm.config import config_from_dict
    from jaxparadigm.errors import ConfigError

    seen = []
    monkeypatch.setattr(build, "train", lambda m, d, tx, s, **kw: seen.append((s, kw["lr_fn"](0))))
    raw = tiny_raw(tmp_path, train={"steps": 2, "eval_every": 1, "log_every": 1})
    build.train_from_config(raw, progress=False)
    build.train_from_config(config_from_dict(raw), progress=False)
    assert len(seen) == 2 and seen[0] == seen[1] and seen[0][0].steps == 2
    with pytest.raises(ConfigError, match=r"optim\.learning_rate"):
        build.train_from_config(tiny_raw(tmp_path, optim={"learning_rate": "fast"}))
    with pytest.raises(TypeError, match=r"^cfg: got str, expected a jaxparadigm\.config\.Config"):
        build.train_from_config("configs/tiny.yaml")
