"""Reliability of the training engine (issue 10): each reproducer of the red-team pass, as written
there, must now behave; each failed (or did not run) before the fix."""

import ast
import json
import os
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

import chex
import numpy as np
import pytest

from jaxparadigm.build import train_from_config as train
from jaxparadigm.errors import InputError, TrainingAborted
from jaxparadigm.train.checkpoint import Checkpointer, CheckpointSignatureError
from jaxparadigm.train.guard import give_up_reason, rollback_lr_scale
from jaxparadigm.train.metrics import read_metrics
from tests.train.conftest import tiny_regression_raw

ROOT = Path(__file__).resolve().parents[2]  # the checkout, whatever the working directory

REG = {"data": {"kind": "regression"}, "model": {"num_outputs": 1}}


def _run(cfg, run_dir, **kw):
    return train(cfg, run_dir=run_dir, progress=False, **kw)


def _events(run_dir: Path, kind: str) -> list[dict]:
    return [r for r in read_metrics(run_dir / "metrics.jsonl") if r.get("event") == kind]


# --- Resume dead end -------------------------------------------------------------------------


def test_a_fresh_start_then_a_plain_run_resumes(make_config, tmp_path):
    """`run ck.yaml resume=false steps=12` then the same without resume=false used to be refused
    ("signature mismatch"): resume/steps/cadence are run control, not signed."""
    ck = {"every": 4, "keep": 2}
    first = make_config(train={"steps": 12, "checkpoint": {**ck, "resume": False}}, **REG)
    again = make_config(
        name="renamed", train={"steps": 24, "log_every": 3, "checkpoint": ck}, **REG
    )
    _run(first, tmp_path / "d2")
    resumed = _run(again, tmp_path / "d2")
    assert resumed.resumed_from == 12
    whole = _run(again, tmp_path / "whole")
    chex.assert_trees_all_equal(resumed.state, whole.state)


def test_a_refused_resume_names_keys_and_keeps_the_checkpoints(make_config, tmp_path):
    run_dir = tmp_path / "run"
    cfg = make_config(train={"steps": 4, "checkpoint": {"every": 2}}, **REG)
    _run(cfg, run_dir)
    other = make_config(
        train={"steps": 8, "checkpoint": {"every": 2}},
        data={"kind": "regression"},
        model={"num_outputs": 1, "hidden": [8]},
        optim={"learning_rate": 0.02},
    )
    with pytest.raises(CheckpointSignatureError) as info:
        _run(other, run_dir)
    msg = str(info.value)
    assert "model.hidden: checkpoint [16], now [8]" in msg
    assert "optim.learning_rate: checkpoint 0.01, now 0.02" in msg
    assert "resume=false" not in msg and "another name" in msg
    assert isinstance(info.value, InputError)
    with Checkpointer(run_dir / "checkpoints", cfg) as ck:
        assert ck.all_steps() == [2, 4]  # untouched


# --- A run that cannot train does not report success -------------------------------------------


def test_every_batch_nan_gives_up_without_saving(make_config, tmp_path):
    cfg = make_config(
        train={"steps": 60, "checkpoint": {"every": 5}, "faults": {"nan_batch": list(range(60))}},
        **REG,
    )
    with pytest.raises(TrainingAborted) as info:
        _run(cfg, tmp_path / "nan")
    msg = str(info.value)
    # default rule: max_rollbacks 10, min_lr_scale 1e-3 with decay 0.5 -> the 10th rollback
    assert "training aborted at step 29 of 60" in msg and "min_lr_scale=0.001" in msg
    assert "30 step(s) skipped, 9 rollback(s), 0 accepted update(s) in the state" in msg
    assert "no finite loss" in msg and "No checkpoint of this state was saved" in msg
    with Checkpointer(tmp_path / "nan" / "checkpoints", cfg) as ck:
        assert ck.all_steps() == []
    assert [e["step"] for e in _events(tmp_path / "nan", "abort")] == [29]
    skipped = [e["step"] for e in _events(tmp_path / "nan", "checkpoint_skipped")]
    assert skipped == [4, 9, 14, 19, 24]  # every save due before the abort: never a bad state


def test_the_lr_scale_never_reaches_zero(make_config, tmp_path):
    """NaN for many steps with a rollback per bad step used to underflow the scale to exactly 0."""
    guard = {"max_bad_steps": 1, "max_rollbacks": 10**6, "min_lr_scale": 1e-30}
    cfg = make_config(
        train={"steps": 170, "guard": guard, "faults": {"nan_batch": list(range(160))}}, **REG
    )
    with pytest.raises(TrainingAborted, match=r"below train.guard.min_lr_scale=1e-30") as info:
        _run(cfg, tmp_path / "long")
    assert "99 rollback(s)" in str(info.value)  # 0.5**100 < 1e-30 <= 0.5**99
    assert rollback_lr_scale(1e-45, 0.5) == 0.0  # float32 underflow ...
    assert give_up_reason(0, 0.0, 10, 1e-30) is not None  # ... is always a reason to give up
    assert give_up_reason(3, 0.5, 3, 1e-3).startswith("a rollback was needed after 3")
    assert give_up_reason(2, 0.25, 3, 1e-3) is None


def test_give_up_after_max_rollbacks_keeps_the_last_finite_loss(make_config, tmp_path):
    bad = list(range(6, 30))
    train_cfg = {"steps": 30, "guard": {"max_rollbacks": 2}, "faults": {"nan_grads": bad}}
    cfg = make_config(train={**train_cfg, "checkpoint": {"every": 5}}, **REG)
    with pytest.raises(TrainingAborted) as info:
        _run(cfg, tmp_path / "g")
    msg = str(info.value)
    assert "at step 14 of 30" in msg and "(train.guard.max_rollbacks=2)" in msg
    assert "5 accepted update(s) in the state" in msg  # rolled back to checkpoint step 5
    assert "(newest checkpoint: step 5)" in msg
    # gradient faults leave the loss finite: the last one seen is reported
    assert "last finite loss" in msg and "at step 14" in msg.split("last finite loss")[1]


# --- The log says what happened ---------------------------------------------------------------


def test_unguarded_nan_is_logged_as_applied_and_not_saved(make_config, tmp_path):
    cfg = make_config(
        train={"steps": 10, "guard": {"enabled": False}, "checkpoint": {"every": 5}}, **REG
    )

    def nan_at_5(step, batch):
        return {**batch, "y": np.full_like(batch["y"], np.nan)} if step == 5 else batch

    run = _run(cfg, tmp_path / "g0", batch_transform=nan_at_5)
    kinds = Counter(e.kind for e in run.events)
    assert kinds["skip"] == 0 and kinds["applied"] == 5  # steps 5..9: NaN params from step 5 on
    assert not np.isfinite(np.asarray(run.state.params["head"]["kernel"])).all()
    with Checkpointer(tmp_path / "g0" / "checkpoints", cfg) as ck:
        assert ck.all_steps() == [5]  # the NaN state of step 10 was not saved
    assert [e["step"] for e in _events(tmp_path / "g0", "checkpoint_skipped")] == [9]


# --- Fault injection from the config ----------------------------------------------------------


def test_faults_knob_poisons_batches_and_gradients(make_config, tmp_path):
    faults = {"nan_grads": [3], "inf_batch": [6], "nan_batch": [8]}
    cfg = make_config(train={"steps": 10, "faults": faults}, **REG)
    run = _run(cfg, tmp_path / "f")
    assert [(e.kind, e.step) for e in run.events if e.kind in ("fault", "skip")] == [
        ("fault", 3), ("skip", 3), ("fault", 6), ("skip", 6), ("fault", 8), ("skip", 8)
    ]  # fmt: skip
    assert np.isfinite(run.losses[3]) and not np.isfinite(run.losses[6])
    assert np.isnan(run.losses[8])
    assert int(run.state.guard.skipped) == 3 and int(run.state.opt_steps) == 7


_KILL = textwrap.dedent(
    """
    import sys
    from jaxparadigm.config import load_config
    from jaxparadigm.build import train_from_config as train
    train(load_config(sys.argv[1]), progress=False)
    """
)


def test_kill_at_then_resume_is_bitwise_equal(make_config, tmp_path):
    import yaml

    raw = tiny_regression_raw(tmp_path, "k", steps=16, checkpoint={"every": 4})
    path = tmp_path / "k.yaml"
    path.write_text(yaml.safe_dump({**raw, "train": {**raw["train"], "faults": {"kill_at": 11}}}))
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "PYTHONPATH": str(Path.cwd())}
    proc = subprocess.run([sys.executable, "-c", _KILL, str(path)], env=env, timeout=300)
    assert proc.returncode == -9  # killed itself before step 11
    assert _events(tmp_path / "k", "fault")[-1]["message"].endswith("SIGKILL before step 11")
    from jaxparadigm.config import config_from_dict

    cfg = config_from_dict(raw)
    resumed = train(cfg, progress=False)
    assert resumed.resumed_from == 8
    whole = _run(cfg, tmp_path / "whole")
    chex.assert_trees_all_equal(resumed.state, whole.state)


# --- metrics.jsonl: each step once after a resume ---------------------------------------------


def test_metrics_has_each_step_once_after_a_resume(make_config, tmp_path):
    cfg = make_config(train={"steps": 24, "log_every": 2, "checkpoint": {"every": 8}}, **REG)
    faults = make_config(
        train={
            "steps": 24,
            "log_every": 2,
            "checkpoint": {"every": 8},
            "faults": {"nan_batch": [10]},
        },
        **REG,
    )
    _run(faults, tmp_path / "m", stop_at=13)  # logs up to 13, a skip at 10, then "crashes"
    _run(faults, tmp_path / "m")  # resumes from 8
    records = read_metrics(tmp_path / "m" / "metrics.jsonl")
    keys = Counter((r["step"], r.get("event"), "eval_loss" in r) for r in records)
    assert [k for k, n in keys.items() if n > 1] == []
    assert [(r["step"], r["message"]) for r in records if r.get("event") == "resume"] == [
        (8, "resumed from checkpoint step 8; records of later steps from the interrupted run "
         "were dropped")
    ]  # fmt: skip
    whole = _run(cfg, tmp_path / "w")  # same log cadence: the same train records
    train_steps = sorted(r["step"] for r in records if "loss" in r)
    assert train_steps == sorted(r["step"] for r in whole.records if "loss" in r)


# --- Structure: named stages, no backend switch at import -------------------------------------


def test_the_loop_is_split_into_named_stages():
    lengths = {
        n.name: n.end_lineno - n.lineno + 1
        for module in ("train_loop.py", "step_stages.py")  # the loop and its per-step stages
        for n in ast.walk(ast.parse((ROOT / "jaxparadigm" / "train" / module).read_text()))
        if isinstance(n, ast.FunctionDef)
    }
    assert {"_setup", "_resume", "_run_step", "_observe", "_checkpoint", "_finish"} <= set(lengths)
    assert max(lengths.values()) <= 75, lengths


_MPL = textwrap.dedent(
    """
    import json, os, sys, matplotlib
    before = matplotlib.rcParams._get_backend_or_none()
    import jaxparadigm.train.train_loop, jaxparadigm.app.train_task, jaxparadigm.claims.figures
    from jaxparadigm.app.train_plots import plot_curves
    from jaxparadigm.claims.figures import bar_chart
    png = plot_curves({"a": ([0, 1], [1.0, 2.0])}, sys.argv[1], title="t", ylabel="y")
    bar = bar_chart("b.png", ["x"], [1.0], "t", "x")
    after = matplotlib.rcParams._get_backend_or_none()
    pyplot = "matplotlib.pyplot" in sys.modules
    print(json.dumps([before, after, pyplot, png.stat().st_size, os.path.getsize(bar)]))
    """
)


def test_importing_the_loop_leaves_matplotlib_alone(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "MPLBACKEND"}
    env.update(JAX_PLATFORMS="cpu", PYTHONPATH=str(Path.cwd()))
    out = subprocess.run(
        [sys.executable, "-c", _MPL, str(tmp_path / "a.png")],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    before, after, pyplot, png_bytes, bar_bytes = json.loads(out.stdout.strip().splitlines()[-1])
    assert before is None and after is None and pyplot is False
    assert png_bytes > 1000 and bar_bytes > 1000
