"""A run folder is owned (C5.1): one writer at a time, a finished run never overwritten,
an interrupted run told how to resume.

* :func:`run_lock` holds ``RUN_DIR/lock`` (:func:`jaxparadigm.common.file_lock.file_lock`, the
  index's lock too) while a run writes the folder: a second run of the same name gets one
  :class:`InputError` at once naming the holder's pid. The lock belongs to the open file, so it
  ends with its process: a dead holder's lock file is simply taken over.
* :func:`refuse_overwrite` refuses a fresh start (``resume: false``) over a finished run (its
  ``report.md`` exists) or an unfinished one with checkpoints (a step folder under
  ``checkpoints/``) unless ``overwrite``: then :func:`set_aside` moves the old run's files into
  ``RUN_DIR.old-<timestamp>`` and the caller removes it once the new run has finished. Both are
  called while the run's lock is held, so a run being written is never judged or moved: the lock
  file stays where it is (set aside are the other entries).
* :class:`RunInterrupted` is a ``KeyboardInterrupt`` carrying the step reached and the newest
  checkpoint's step: ``interrupted at step N; rerun the same command to resume from step M``.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

from jaxparadigm.common.file_lock import file_lock
from jaxparadigm.errors import InputError

__all__ = [
    "LOCK",
    "RunInterrupted",
    "checkpoint_steps",
    "refuse_overwrite",
    "run_lock",
    "set_aside",
]

#: The lock file's name inside a run folder.
LOCK = "lock"


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C during a run at data step ``step``; ``resume_step``: the newest complete checkpoint
    (None: none saved); ``resumes``: whether a rerun of the same config resumes
    (``train.checkpoint.resume``). Its text is the one line the CLI prints."""

    def __init__(self, step: int, resume_step: int | None, resumes: bool = True) -> None:
        super().__init__(step, resume_step, resumes)
        self.step, self.resume_step, self.resumes = step, resume_step, resumes

    def __str__(self) -> str:
        head = f"interrupted at step {self.step}"
        if self.resume_step is None:
            return f"{head}; no checkpoint was saved yet, so a rerun starts from step 0"
        how = "the same command" if self.resumes else "with train.checkpoint.resume=true"
        return f"{head}; rerun {how} to resume from step {self.resume_step}"


def run_lock(run_dir: Path, name: str) -> contextlib.AbstractContextManager[None]:
    """Hold ``run_dir/lock`` while the run ``name`` writes ``run_dir`` (created if missing): the
    one advisory lock of :func:`jaxparadigm.common.file_lock.file_lock` (a symlink or a file that
    is not regular is refused; a second run gets one :class:`InputError` naming the holder)."""
    run_dir.mkdir(parents=True, exist_ok=True)

    def busy(holder: str) -> str:
        return (
            f"run {name!r} ({run_dir}) is being written by {holder}; wait for it to finish, or "
            "pass another name=..."
        )

    return file_lock(run_dir / LOCK, f"run {name!r}", what="the run's lock file", busy=busy)


def checkpoint_steps(run_dir: Path) -> list[int]:
    """The step folders under ``run_dir/checkpoints``, ascending: ASCII digit names only ("²"
    passes ``str.isdigit()`` but not ``int()``)."""
    ckpt = run_dir / "checkpoints"
    if not ckpt.is_dir():
        return []
    names = (p.name for p in ckpt.iterdir() if p.is_dir())
    return sorted(int(n) for n in names if n.isascii() and n.isdigit())


def refuse_overwrite(run_dir: Path, name: str, *, resume: bool, overwrite: bool) -> None:
    """One :class:`InputError` when a fresh start (``resume`` false) would overwrite the run in
    ``run_dir`` and ``overwrite`` is not given: a finished run (its ``report.md`` exists), or an
    unfinished one with checkpoints (which a fresh start deletes). Call it holding the run lock."""
    if resume or overwrite:
        return
    kept = (
        f"--overwrite (the old run is kept as {run_dir.name}.old-<timestamp> until the new one "
        "finishes)"
    )
    if (run_dir / "report.md").is_file():
        raise InputError(
            f"run {name!r} in {run_dir} is finished and this config starts afresh "
            "(train.checkpoint.resume: false), which would overwrite it; pass another name=... "
            f"for a new run, or {kept}"
        )
    steps = checkpoint_steps(run_dir)
    if steps:
        raise InputError(
            f"run {name!r} in {run_dir} is unfinished (checkpoints up to step {steps[-1]}) and "
            "this config starts afresh (train.checkpoint.resume: false), which would delete its "
            "checkpoints; rerun with train.checkpoint.resume=true to resume it, pass another "
            f"name=... for a new run, or {kept}"
        )


def set_aside(run_dir: Path) -> Path | None:
    """Move the entries of ``run_dir`` other than its lock file into a new folder
    ``RUN_DIR.old-<timestamp>`` (``~1``, ``~2`` ... appended while the name is taken); its path,
    or None when there is nothing but the lock (or no folder). ``run_dir`` and its lock stay, so
    the caller's hold on the lock is kept."""
    entries = sorted(p for p in run_dir.iterdir() if p.name != LOCK) if run_dir.is_dir() else []
    if not entries:
        return None
    aside = run_dir.with_name(f"{run_dir.name}.old-{time.strftime('%Y%m%d-%H%M%S')}")
    n = 1
    while aside.exists():
        aside, n = aside.with_name(f"{aside.name.split('~')[0]}~{n}"), n + 1
    aside.mkdir()
    for entry in entries:
        os.replace(entry, aside / entry.name)
    return aside
