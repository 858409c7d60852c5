"""The three training tasks (``TASKS[cfg.task]``) on tiny configs: reports with measured figures and plots."""

import dataclasses
from pathlib import Path

import pytest

from jaxparadigm.app.tasks import TASKS
from jaxparadigm.app.train_task import drift_features
from jaxparadigm.config import OverflowConfig, config_from_dict, load_config
from jaxparadigm.train.data import build_dataset

CONFIGS = Path(__file__).resolve().parents[2] / "configs"  # whatever the working directory


def test_train_report_has_checks_figures_and_plots(make_config):
    cfg = make_config(name="exp", train={"steps": 20, "plots": True, "checkpoint": {"every": 10}})
    report = run_experiment(cfg)
    text = report.read_text()
    assert report.name == "report.md" and report.parent.name == "exp"
    assert "schema validation" in text and text.count("drift report (PSI threshold 0.2") == 2
    shifted = text.split("must be flagged")[1].split("```")[1].splitlines()
    assert shifted[3].split()[0] == "0" and shifted[3].endswith("DRIFT")  # shifted feature 0
    assert "steps run: 20 of 20" in text and "sha256" in text and "P99" in text
    for png in ("loss.png", "lr.png", "grad_norm.png"):
        assert (report.parent / png).stat().st_size > 1000 and f"]({png})" in text
    assert (report.parent / "metrics.jsonl").exists()


def test_overflow_report_measures_the_wrap(tmp_path):
    cfg = dataclasses.replace(
        load_config(CONFIGS / "overflow.yaml", [f"out_dir={tmp_path}"]),
        overflow=OverflowConfig(window=2),
    )
    text = run_experiment(cfg).read_text()
    assert "wrapped to a negative value: **True** (min -2147483648)" in text
    assert "went negative: **True**" in text
    assert "its lr stayed constant: **True**" in text
    assert (tmp_path / "overflow" / "lr_around_overflow.png").exists()


def test_mixed_precision_report_compares_nu_dtypes(make_config):
    cfg = make_config(
        name="mp",
        task="mixed_precision",
        train={"steps": 8},
        mixed_precision={"nu_dtypes": ["float32", "float16"]},
    )
    report = run_experiment(cfg)
    text = report.read_text()
    rows = [line for line in text.splitlines() if line.startswith("| float")]
    assert len(rows) == 2 and "float16 + loss scaling" in rows[1]
    f32_bytes, f16_bytes = (int(r.split("|")[3]) for r in rows)
    assert f32_bytes == 2 * f16_bytes
    assert (report.parent / "loss_by_nu_dtype.png").exists()


def test_byte_corpus_drift_features():
    ds = build_dataset(config_from_dict({"name": "x", "data": {"kind": "pydoc_chars"}}).data)
    feats = drift_features(ds, "val")
    assert feats.ndim == 2 and feats.shape[1] == 5
    assert ((feats[:, 1:] >= 0) & (feats[:, 1:] <= 1)).all()


def run_experiment(cfg):
    """What ``jaxparadigm run`` does with a loaded config: the task of the one TASKS table."""
    return TASKS[cfg.task](cfg)


def test_retrieval_task_is_the_retrieval_module_s(make_config):
    """The duplicate dispatcher (``app.tasks.run_experiment``, which refused ``retrieval``) is
    gone: every task, retrieval included, runs through the one table."""
    from jaxparadigm.app import retrieval_task

    assert make_config(task="retrieval").task == "retrieval"
    assert TASKS["retrieval"] is retrieval_task.run_experiment


def test_bad_train_arguments(make_config):
    from jaxparadigm.build import train_from_config as train

    with pytest.raises(ValueError, match="stop_at: got -1"):
        train(make_config(), stop_at=-1)
    with pytest.raises(TypeError, match="batch_transform: got 1, expected a callable"):
        train(make_config(), batch_transform=1)
    with pytest.raises(ValueError, match="model.num_outputs: got 2, expected 1"):
        train(make_config(data={"kind": "regression"}))
    with pytest.raises(ValueError, match="model.kind: got 'mlp'"):
        train(make_config(data={"kind": "pydoc_chars"}))
