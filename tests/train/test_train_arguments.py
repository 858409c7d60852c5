"""``train(model, dataset, tx, settings)`` refuses bad library arguments with ONE clear error
(issue 34): the settings types check their fields when built, ``train`` its arguments' types, the
run directory and the batch size against the dataset, before anything runs."""

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
