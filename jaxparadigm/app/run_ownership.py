"""``jaxparadigm run``'s hold on its run folder ``<out_dir>/<name>`` (issue 35, C5.1).

A finished run is never overwritten: a ``train`` run that starts afresh over it is refused with one
line, or with ``--overwrite`` sets it aside until the new run finishes; the folder is locked while
a run writes it (:mod:`jaxparadigm.train.run_folder`).
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
    """``jaxparadigm run``'s hold on ``<out_dir>/<name>`` (issue 35, C5.1): a ``train`` run that
    starts afresh (``train.checkpoint.resume: false``, or no checkpoints) over a finished run is
    refused unless ``overwrite``, which sets the old folder aside as ``NAME.old-<timestamp>`` and
    removes it once the new run has finished; the folder is locked while the run writes it. A
    process of a multi-process group does neither: the launcher that started it holds the folder
    (``jaxparadigm run --num-processes``)."""
    if cfg.train.distributed.coordinator_address is not None or os.environ.get(ENV_COORDINATOR):
        yield  # a process of a group: its launcher (or the user) owns the folder
        return
    run_dir = run_dir_for(cfg)
    c = cfg.train.checkpoint
    fresh = cfg.task == "train" and not (c.every > 0 and c.resume)
    aside = None
    if fresh:
        refuse_overwrite(run_dir, cfg.name, resume=False, overwrite=overwrite)
        if overwrite and (run_dir / "report.md").is_file():
            aside = set_aside(run_dir)
            print(f"jaxparadigm run: the old run {cfg.name!r} is kept in {aside} until this one "
                  "finishes", file=sys.stderr)  # fmt: skip
    with run_lock(run_dir, cfg.name):
        yield
    if aside is not None:
        shutil.rmtree(aside, ignore_errors=True)
