"""The tasks of ``jaxparadigm run``: ONE table, task name (``cfg.task``) -> function (C1, C4, C5).

Each function takes a loaded :class:`~jaxparadigm.config.Config`, runs the task and returns the
path of the Markdown report it wrote under ``<cfg.out_dir>/<cfg.name>/``. The CLI (and a script:
``TASKS[cfg.task](cfg)``) looks the task up here once; no task dispatches on ``cfg.task`` again.
The values ``Config.task`` admits are this table's keys (the config cannot import the
application; tests/app/test_tasks.py ties its ``Literal`` to this table).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from jaxparadigm.app.retrieval_task import run_experiment as run_retrieval
from jaxparadigm.app.train_task import run_mixed_precision, run_overflow, run_train
from jaxparadigm.config import Config

__all__ = ["TASKS"]

#: Every task of ``jaxparadigm run``: C5.1 train, C4.2 mixed_precision, C4.3 overflow, C1 retrieval.
TASKS: dict[str, Callable[[Config], Path]] = {
    "train": run_train,
    "mixed_precision": run_mixed_precision,
    "overflow": run_overflow,
    "retrieval": run_retrieval,
}
