"""Run folders at their edges (issue 39): the interrupt's arguments survive pickling, a lock
file still empty (its holder has not written it yet) or holding bytes that are not UTF-8, the
refusal's whole sentence, and set-aside names when the timestamp's name is taken once, twice.

Each test killed a one-line mutant of ``train/run_folder.py`` that the earlier tests let through
(``make mutation MODULE=train.run_folder``).
"""

import fcntl
import os
import pickle
import re
import time

import pytest

from jaxparadigm.errors import InputError
from jaxparadigm.train import run_folder
from jaxparadigm.train.run_folder import RunInterrupted, refuse_overwrite, run_lock, set_aside


@pytest.mark.parametrize("args", [(5, 4, True), (0, None, True), (9, 8, False)])
def test_the_interrupt_keeps_its_arguments_through_pickling(args):
    """Boundary: step 0 and no checkpoint (None); the exception crosses a process boundary (a
    multiprocessing worker's Ctrl-C) by its args."""
    e = RunInterrupted(*args)
    assert e.args == args
    back = pickle.loads(pickle.dumps(e))
    assert (back.step, back.resume_step, back.resumes) == args and str(back) == str(e)


def _held(path, content: bytes):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    fd = os.open(path, os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return fd


def test_an_empty_lock_is_reread_for_one_second_then_named_another_process(tmp_path):
    """Boundary: the holder took the lock but has not written it yet: re-read for 1 s."""
    fd = _held(tmp_path / "run" / "lock", b"")
    try:
        start = time.monotonic()
        with pytest.raises(InputError) as err, run_lock(tmp_path / "run", "r"):
            pass
        waited = time.monotonic() - start
    finally:
        os.close(fd)
    assert "is being written by another process;" in str(err.value)
    assert 0.95 <= waited < 1.9, waited


def test_a_lock_of_bytes_that_are_not_utf8_is_shown_replaced(tmp_path):
    fd = _held(tmp_path / "run" / "lock", b"pid 12 (since \xff)\n")
    try:
        with pytest.raises(InputError) as err, run_lock(tmp_path / "run", "r"):
            pass
    finally:
        os.close(fd)
    assert "is being written by pid 12 (since \ufffd); wait for it" in str(err.value)


def test_the_refusal_to_overwrite_a_finished_run_in_full(tmp_path):
    run = tmp_path / "r1"
    run.mkdir()
    (run / "report.md").write_text("done")
    with pytest.raises(InputError) as err:
        refuse_overwrite(run, "r1", resume=False, overwrite=False)
    assert str(err.value) == (
        f"run 'r1' in {run} is finished and this config starts afresh "
        "(train.checkpoint.resume: false), which would overwrite it; pass another name=... for a "
        "new run, or --overwrite (the old run is kept as r1.old-<timestamp> until the new one "
        "finishes)"
    )


def test_set_aside_names_a_timestamp_then_numbers_collisions(tmp_path, monkeypatch):
    """Boundary: the timestamp's name is free; taken once (~1); taken twice (~2)."""
    names = []
    for i in range(3):
        run = tmp_path / "run"
        run.mkdir()
        (run / "n").write_text(str(i))
        if i == 0:
            aside = set_aside(run)
            assert re.fullmatch(r"run\.old-\d{8}-\d{6}", aside.name), aside.name
            stamp = aside.name.removeprefix("run.old-")
            monkeypatch.setattr(run_folder.time, "strftime", lambda fmt, s=stamp: s)
        else:
            aside = set_aside(run)
        names.append(aside.name)
    assert names == [f"run.old-{stamp}", f"run.old-{stamp}~1", f"run.old-{stamp}~2"]
    assert [(tmp_path / n / "n").read_text() for n in names] == ["0", "1", "2"]
    assert set_aside(tmp_path / "run") is None  # nothing to set aside


def test_a_run_lock_that_is_a_symlink_or_a_fifo_is_refused_and_never_written_through(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    target = tmp_path / "notes.txt"
    target.write_text("keep me\n")
    (run / "lock").symlink_to(target)
    with pytest.raises(InputError) as err, run_lock(run, "r"):
        pass
    assert str(err.value) == (
        f"{run / 'lock'}: the run's lock file is a symlink; a writer never follows a link: remove "
        "it (the lock file is created again) and run this again"
    )
    assert target.read_text() == "keep me\n"
    (run / "lock").unlink()
    os.mkfifo(run / "lock")
    with pytest.raises(InputError) as err, run_lock(run, "r"):
        pass
    assert str(err.value) == (
        f"{run / 'lock'}: the run's lock file is a FIFO, expected a regular file: remove it and "
        "run this again"
    )
