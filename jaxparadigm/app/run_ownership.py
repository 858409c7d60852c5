"""``jaxparadigm run``'s hold on its run folder ``<out_dir>/<name>`` (C5.1).

The folder is locked first (:mod:`jaxparadigm.train.run_folder`); every decision about what is in
it is taken while the lock is held, so a run being written is refused, never judged or moved. A
``train`` run that starts afresh (``train.checkpoint.resume: false``) over a finished run, or over
an unfinished one with checkpoints, is refused with one line; ``--overwrite`` starts afresh over
any run of the name, its files set aside until the new run finishes.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
from collections.abc import Iterator

from jaxparadigm.build import run_dir_for
from jaxparadigm.config import Config
from jaxparadigm.train.distributed import ENV_COORDINATOR
from jaxparadigm.train.run_folder import refuse_overwrite, run_lock, set_aside

__all__ = ["owned_run_folder"]


@contextlib.contextmanager
def owned_run_folder(cfg: Config, *, overwrite: bool = False) -> Iterator[None]:
    """``jaxparadigm run``'s hold on ``<out_dir>/<name>`` (C5.1): the run lock is taken, then a
    ``train`` run that starts afresh (``train.checkpoint.resume: false``, or checkpoints off)
    over a finished run, or over an unfinished one with checkpoints, is refused unless
    ``overwrite``. ``overwrite`` moves the old run's files into ``NAME.old-<timestamp>`` (the new
    run then starts from step 0, whatever ``resume`` says) and removes them once the new run has
    finished. A process of a multi-process group does neither: the launcher that started it holds
    the folder (``jaxparadigm run --num-processes``)."""
    if cfg.train.distributed.coordinator_address is not None or os.environ.get(ENV_COORDINATOR):
        yield  # a process of a group: its launcher (or the user) owns the folder
        return
    run_dir = run_dir_for(cfg)
    c = cfg.train.checkpoint
    aside = None
    with run_lock(run_dir, cfg.name):  # first: nothing is judged or moved while another writes
        if cfg.task == "train":
            refuse_overwrite(
                run_dir, cfg.name, resume=c.every > 0 and c.resume, overwrite=overwrite
            )
        if overwrite:
            aside = set_aside(run_dir)
        if aside is not None:
            print(f"jaxparadigm run: the old run {cfg.name!r} is kept in {aside} until this one "
                  "finishes", file=sys.stderr)  # fmt: skip
        yield
    if aside is not None:
        shutil.rmtree(aside, ignore_errors=True)
