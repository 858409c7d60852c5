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
    path, _ = _config(tmp_path, steps=100_000, resume=True)
    proc = subprocess.Popen(
        [sys.executable, "-m", "jaxparadigm", "run", str(path)],
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # Ctrl-C as in a terminal: SIGINT's default disposition, not the one this session
        # inherited (ignored when the suite runs in the background: the run would never stop)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
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
