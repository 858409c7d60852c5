"""Is a run already finished? A file-system look at ``<out_dir>/<name>/checkpoints`` (C5.1).

``jaxparadigm run`` asks :func:`finished_run` before starting anything (no JAX backend, no orbax):
a run whose final step (``train.steps``) is already a complete checkpoint of the same
state-defining config is done, and running it again would only overwrite its report with a
zero-step one. Raising ``train.steps`` trains further (resume); another ``name=`` starts a
separate run.
"""

from __future__ import annotations

import json
from pathlib import Path

# The checkpoint module's own definitions of "a complete step" and "the signed config".
from jaxparadigm.train.checkpoint import _REQUIRED, _config_json

__all__ = ["finished_run"]


def _steps(directory: Path) -> list[int]:
    return sorted(int(p.name) for p in directory.iterdir() if p.is_dir() and p.name.isdigit())


def finished_run(cfg) -> str | None:
    """A one-line notice when the run ``cfg`` describes has nothing left to do, else None (C5.1).

    True when all hold: task ``train``, checkpoints on and resumed (``train.checkpoint.every > 0``,
    ``train.checkpoint.resume``), the newest step directory under ``<out_dir>/<name>/checkpoints``
    is exactly ``train.steps``, it holds every file of a complete checkpoint, and its stored
    config equals this config's signed part (``model``, ``data``, ``optim``, ``train.seed``). Any
    other case (no checkpoint, a smaller step to resume from, a larger one, another config) is left
    to the training loop, which resumes or refuses with its own message.
    """
    c = cfg.train
    if cfg.task != "train" or c.checkpoint.every <= 0 or not c.checkpoint.resume:
        return None
    run_dir = Path(cfg.out_dir) / cfg.name
    ckpt = run_dir / "checkpoints"
    if not ckpt.is_dir():
        return None
    steps = _steps(ckpt)
    if not steps or steps[-1] != c.steps:
        return None
    step_dir = ckpt / str(c.steps)
    if not all((step_dir / f).is_file() for f in _REQUIRED):
        return None
    try:
        meta = json.loads((step_dir / "meta" / "metadata").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None  # the loop's restore reports the damage
    if not isinstance(meta, dict) or meta.get("config") != json.loads(_config_json(cfg)):
        return None
    return (
        f"run {cfg.name!r} is already complete: {step_dir} is its final step ({c.steps}); "
        f"nothing to do (report: {run_dir / 'report.md'}; raise train.steps to train further, "
        "or pass another name=... for a new run)"
    )
