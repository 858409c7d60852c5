"""A run folder is owned (issue 35 item 5): a finished run is not overwritten by a fresh start
(one line; ``--overwrite`` sets it aside until the new run finishes), a folder being written is
locked (a second run is refused naming the holder's pid, a dead holder's lock is taken over), and
Ctrl-C ends with one line and exit 130."""

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from jaxparadigm import cli
from jaxparadigm.app.run_ownership import owned_run_folder
from jaxparadigm.config import config_from_dict
from jaxparadigm.errors import InputError
from jaxparadigm.train.checkpoint import _REQUIRED
from jaxparadigm.train.run_folder import RunInterrupted, run_lock
from tests.train.conftest import tiny_raw

ROOT = str(Path(__file__).resolve().parents[2])
HOLD = "import sys, time; from pathlib import Path; from jaxparadigm.train.run_folder import RunInterrupted, run_lock\n"


def _config(tmp_path, lr=0.01, steps=10, name="own", resume=False):
    raw = tiny_raw(
        tmp_path, name, optim={"learning_rate": lr}, train={"steps": steps, "log_every": 5}
    )
    raw["train"]["checkpoint"] = {"every": 5, "resume": resume}
    path = tmp_path / f"{name}-{lr}-{steps}.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path, raw


def _env(**extra):
    env = {k: v for k, v in os.environ.items() if k not in ("TQDM_DISABLE", "XLA_FLAGS")}
    return {**env, "JAX_PLATFORMS": "cpu", "PYTHONPATH": ROOT, **extra}


def test_a_finished_run_is_refused_in_one_line_then_overwritten_on_request(tmp_path, capsys):
    first, _ = _config(tmp_path)
    assert cli.main(["run", str(first), "--no-progress"]) == 0
    run = tmp_path / "own"
    before = {p: (run / p).read_bytes() for p in ("report.md", "metrics.jsonl")}
    capsys.readouterr()
    other, _ = _config(tmp_path, lr=0.02)
    assert cli.main(["run", str(other), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.startswith("jaxparadigm run: error: run 'own'"), err
    assert "name=" in err and "--overwrite" in err
    assert {p: (run / p).read_bytes() for p in before} == before  # untouched
    assert cli.main(["run", str(other), "--no-progress", "--overwrite"]) == 0
    assert "kept in" in capsys.readouterr().err
    assert (run / "metrics.jsonl").read_bytes() != before["metrics.jsonl"]
    assert "lr 0.02" in (run / "report.md").read_text()
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_dir()) == ["own"]  # aside removed


def test_overwrite_keeps_the_old_run_until_the_new_one_finishes(tmp_path):
    _, raw = _config(tmp_path)
    cfg = config_from_dict(raw)
    run = tmp_path / "own"
    run.mkdir()
    (run / "report.md").write_text("old report\n")
    with pytest.raises(InputError, match="is finished"), owned_run_folder(cfg):
        pass
    with pytest.raises(RuntimeError), owned_run_folder(cfg, overwrite=True):
        (aside,) = tmp_path.glob("own.old-*")
        assert (aside / "report.md").read_text() == "old report\n"
        raise RuntimeError("the new run failed")
    (aside,) = tmp_path.glob("own.old-*")  # still there: the new run did not finish
    assert (aside / "report.md").read_text() == "old report\n"
    (run / "report.md").write_text("a finished run\n")
    resumed = config_from_dict({**raw, "train": {**raw["train"], "checkpoint": {"every": 5}}})
    with owned_run_folder(resumed):  # resume: true continues the run, nothing to refuse
        pass


def _holder(tmp_path, hold_s):
    code = HOLD + (
        f"with run_lock(Path({str(tmp_path / 'own')!r}), 'own'):\n"
        f"    print('held', flush=True); time.sleep({hold_s})\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code], env=_env(), stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def test_a_second_writer_is_refused_naming_the_holder_and_a_dead_ones_lock_is_taken(tmp_path):
    proc = _holder(tmp_path, 60)
    try:
        t = time.monotonic()
        with pytest.raises(InputError) as err, run_lock(tmp_path / "own", "own"):
            pass
        assert time.monotonic() - t < 5  # at once, no waiting for the holder
        msg = str(err.value)
        assert f"pid {proc.pid}" in msg and "name=" in msg and "\n" not in msg, msg
    finally:
        proc.kill()
        proc.wait()
    assert (tmp_path / "own" / "lock").read_text().startswith(f"pid {proc.pid}")  # left behind
    with run_lock(tmp_path / "own", "own"):  # the dead holder's lock is taken over
        assert (tmp_path / "own" / "lock").read_text().startswith(f"pid {os.getpid()} ")


def test_the_cli_refuses_a_run_whose_folder_is_being_written(tmp_path, capsys):
    path, _ = _config(tmp_path)
    proc = _holder(tmp_path, 60)
    try:
        assert cli.main(["run", str(path), "--no-progress"]) == 2
    finally:
        proc.kill()
        proc.wait()
    err = capsys.readouterr().err.strip()
    assert f"is being written by pid {proc.pid}" in err and "\n" not in err, err
    assert not (tmp_path / "own" / "metrics.jsonl").exists()


def _complete(ckpt: Path, step: int) -> bool:
    return all((ckpt / str(step) / f).is_file() for f in _REQUIRED)


def test_ctrl_c_ends_with_one_line_and_exit_130(tmp_path):
    _interrupt_a_run(tmp_path, lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # a terminal


def test_ctrl_c_of_a_run_started_in_the_background_ends_the_same_way(tmp_path):
    """A shell's background job inherits SIGINT ignored: ``kill -INT`` during training did
    nothing (``run`` installed no handler), now the same line and exit 130."""
    _interrupt_a_run(tmp_path, lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))


def _interrupt_a_run(tmp_path, preexec_fn) -> None:
    path, _ = _config(tmp_path, steps=100_000, resume=True)
    proc = subprocess.Popen(
        [sys.executable, "-m", "jaxparadigm", "run", str(path)],
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=preexec_fn,
    )
    assert proc.stderr is not None
    ckpt = tmp_path / "own" / "checkpoints"
    deadline = time.monotonic() + 120
    while not _complete(ckpt, 5) and time.monotonic() < deadline:
        time.sleep(0.1)  # until the first checkpoint (step 5) is written
    time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err[-2000:]
    assert "Traceback" not in err, err[-2000:]
    last = err.strip().splitlines()[-1]
    m = re.fullmatch(
        r"jaxparadigm run: interrupted at step (\d+); rerun the same command to resume from "
        r"step (\d+)",
        last,
    )
    assert m, err[-2000:]
    steps = sorted(int(p.name) for p in ckpt.iterdir() if p.name.isdigit())
    complete = [k for k in steps if _complete(ckpt, k)]
    assert int(m[2]) == complete[-1] and int(m[1]) >= complete[-1] >= 5, (last, steps)


def test_the_interrupt_line_says_how_to_resume():
    assert str(RunInterrupted(12, 10)) == (
        "interrupted at step 12; rerun the same command to resume from step 10"
    )
    assert str(RunInterrupted(12, 10, resumes=False)) == (
        "interrupted at step 12; rerun with train.checkpoint.resume=true to resume from step 10"
    )
    assert str(RunInterrupted(3, None)) == (
        "interrupted at step 3; no checkpoint was saved yet, so a rerun starts from step 0"
    )
    assert isinstance(RunInterrupted(1, 0), KeyboardInterrupt)


def _tree(folder: Path) -> dict:
    """Every file under ``folder`` (the lock file left out) -> its bytes."""
    return {
        str(p.relative_to(folder)): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name != "lock"
    }


def _fabricated_run(run: Path, *, finished: bool) -> dict:
    """A run folder with a step-5 checkpoint (and a report when ``finished``), no training."""
    (run / "checkpoints" / "5" / "meta").mkdir(parents=True)
    (run / "checkpoints" / "5" / "meta" / "metadata").write_text("{}")
    (run / "metrics.jsonl").write_text('{"step": 5}\n')
    if finished:
        (run / "report.md").write_text("old report\n")
    return _tree(run)


@pytest.mark.parametrize("resume", [False, True])
def test_overwrite_is_refused_while_another_run_holds_the_lock_and_nothing_moves(
    tmp_path, capsys, resume
):
    """The overwrite decision is taken under the run lock: a live run's folder is never set
    aside (it was moved, and the new run trained beside the live one and then deleted it)."""
    path, _ = _config(tmp_path, steps=5, resume=resume)
    run = tmp_path / "own"
    with run_lock(run, "own"):  # another writer of the run (a second open file description)
        before = _fabricated_run(run, finished=True)
        assert cli.main(["run", str(path), "--no-progress", "--overwrite"]) == 2
        err = capsys.readouterr().err.strip()
        holder = (run / "lock").read_text().strip()
    assert holder.startswith(f"pid {os.getpid()} ")
    assert err == (
        f"jaxparadigm run: error: run 'own' ({run}) is being written by {holder}; wait for it to "
        "finish, or pass another name=..."
    )
    assert _tree(run) == before
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_dir()) == ["own"]  # none set aside


def test_a_fresh_start_over_an_unfinished_runs_checkpoints_is_refused_in_one_line(tmp_path, capsys):
    """``resume: false`` over an interrupted run with checkpoints: refused (it started again
    from step 0 and deleted them), nothing changed."""
    fresh, _ = _config(tmp_path, steps=10, resume=False)
    run = tmp_path / "own"
    before = _fabricated_run(run, finished=False)
    assert cli.main(["run", str(fresh), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        f"jaxparadigm run: error: run 'own' in {run} is unfinished (checkpoints up to step 5) "
        "and this config starts afresh (train.checkpoint.resume: false), which would delete its "
        "checkpoints; rerun with train.checkpoint.resume=true to resume it, pass another "
        "name=... for a new run, or --overwrite (the old run is kept as own.old-<timestamp> "
        "until the new one finishes)"
    )
    assert _tree(run) == before


def test_an_unfinished_run_resumes_saying_so_or_starts_afresh_on_overwrite(tmp_path, capsys):
    """Interrupted after its step-5 checkpoint, rerun resuming: goes on from step 5 and says so
    in one line; ``--overwrite``: afresh, from step 0, the old files removed at the end."""
    short, _ = _config(tmp_path, steps=5, resume=True)
    assert cli.main(["run", str(short), "--no-progress"]) == 0
    run = tmp_path / "own"
    (run / "report.md").unlink()  # as a run interrupted after its step-5 checkpoint
    capsys.readouterr()
    resumed, _ = _config(tmp_path, steps=10, resume=True)
    assert cli.main(["run", str(resumed)]) == 0  # the notice goes with the progress lines
    out, err = capsys.readouterr()
    notice = f"own: resumed from checkpoint step 5 of 10 ({run / 'checkpoints'})"
    assert err.splitlines()[0] == notice and err.count("resumed from") == 1
    assert "steps run: 10 of 10 (resumed from checkpoint step 5)" in (run / "report.md").read_text()
    assert cli.main(["run", str(resumed), "--no-progress", "--overwrite"]) == 0
    out, err = capsys.readouterr()
    assert "resumed" not in err and "kept in" in err
    assert "steps run: 10 of 10\n" in (run / "report.md").read_text()
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_dir()) == ["own"]  # aside removed
