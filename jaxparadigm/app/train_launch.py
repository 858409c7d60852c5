"""``jaxparadigm run CONFIG --num-processes N``: check the config, then start the group (C5.2).

The config is loaded (unless the caller passes it) and checked here
(:func:`jaxparadigm.config.relations.launch_problem`), so a bad config fails before any process
starts (exit 2); the group itself is :func:`jaxparadigm.train.launch.launch_workers`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path

from jaxparadigm.build import run_dir_for
from jaxparadigm.common.numbers import check_int
from jaxparadigm.config import Config, load_config
from jaxparadigm.config.relations import launch_problem
from jaxparadigm.errors import ConfigError
from jaxparadigm.train import launch_workers

__all__ = ["check_process_counts", "launch"]


def check_process_counts(num_processes: object, devices_per_process: object) -> None:
    """Refuse ``--num-processes``/``--devices-per-process`` values that are not ints >= 1 (None:
    not given) with one InputError naming the option."""
    for name, value in (
        ("num_processes", num_processes),
        ("devices_per_process", devices_per_process),
    ):
        if value is not None:
            check_int(f"--{name.replace('_', '-')}", value, 1)


def launch(
    config: str | os.PathLike,
    overrides: Sequence[str] = (),
    *,
    num_processes: int,
    devices_per_process: int | None = None,
    grace_s: float = 3.0,
    timeout_s: float | None = None,
    cfg: Config | None = None,
) -> Path:
    """Run ``config`` as ``num_processes`` local workers on ``jax.distributed``; return the report
    path written by process 0 (C5.2). Failures: see :mod:`jaxparadigm.train.launch`.

    ``timeout_s`` (None: no limit) stops the whole group and raises ``WorkerFailed`` when the run
    takes longer. ``cfg``: the config of ``config`` and ``overrides`` already loaded by the
    caller (the CLI), so the file is not read again here (None: load it).
    """
    check_process_counts(num_processes, devices_per_process)
    if cfg is None:
        cfg = load_config(config, overrides)
    problem = launch_problem(cfg)
    if problem is not None:
        raise ConfigError(problem)
    cmd = [sys.executable, "-m", "jaxparadigm", "run", os.fspath(config), *overrides]
    return launch_workers(
        cmd,
        run_dir_for(cfg),
        num_processes=num_processes,
        devices_per_process=devices_per_process,
        grace_s=grace_s,
        timeout_s=timeout_s,
    )
