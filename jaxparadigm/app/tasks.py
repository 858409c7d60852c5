"""The tasks of ``jaxparadigm run``: ONE table, task name (``cfg.task``) -> function (C1, C4, C5).

Each function takes a loaded :class:`~jaxparadigm.config.Config`, runs the task and returns the
path of the Markdown report it wrote under ``<cfg.out_dir>/<cfg.name>/``. The CLI looks the task
up here once; no task dispatches on ``cfg.task`` again.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from jaxparadigm.app.retrieval_task import run_experiment as run_retrieval
from jaxparadigm.app.train_task import run_mixed_precision, run_overflow, run_train
from jaxparadigm.config import Config

__all__ = ["TASKS", "TRAIN_TASKS", "run_experiment"]

#: The tasks that train or step an optimiser (C5.1 train, C4.2 mixed_precision, C4.3 overflow).
TRAIN_TASKS: dict[str, Callable[[Config], Path]] = {
    "train": run_train,
    "mixed_precision": run_mixed_precision,
    "overflow": run_overflow,
}

#: Every task of ``jaxparadigm run``: the values ``Config.task`` admits.
TASKS: dict[str, Callable[[Config], Path]] = {**TRAIN_TASKS, "retrieval": run_retrieval}


def run_experiment(cfg: Config) -> Path:
    """Run one of :data:`TRAIN_TASKS` (``cfg.task``); return the report path (C5.1, C4.2, C4.3).

    For scripts and tests that run a training task directly; a ``cfg.task`` outside
    :data:`TRAIN_TASKS` is a ValueError (retrieval runs through ``TASKS["retrieval"]``)."""
    if cfg.task not in TRAIN_TASKS:
        raise ValueError(
            f"task: got {cfg.task!r}, expected one of {', '.join(TRAIN_TASKS)} "
            "(retrieval runs through jaxparadigm.app.retrieval_task)"
        )
    return TRAIN_TASKS[cfg.task](cfg)
