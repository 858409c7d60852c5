"""Is a run already finished? A file-system look at ``<out_dir>/<name>/checkpoints`` (C5.1).

``jaxparadigm run`` asks :func:`finished_run` (through ``jaxparadigm.build.finished_run_for``)
before starting anything (no JAX backend, no orbax): a run whose final step (``train.steps``) is
already a complete checkpoint of the same
state-defining config is done, and running it again would only overwrite its report with a
zero-step one. Raising ``train.steps`` trains further (resume); another ``name=`` starts a
separate run. A run killed after its final checkpoint but before its ``report.md`` was written
is not done: the report is missing, so the run goes on, resumes at its final
checkpoint without training a step, and writes the report (final evaluation and signature of the
restored state; the steps' figures are in ``metrics.jsonl``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

# The checkpoint module's own definitions of "a complete step" and "the signed config".
from jaxparadigm.train.checkpoint import _REQUIRED
from jaxparadigm.train.checkpoint_signature import _config_json
from jaxparadigm.train.run_folder import checkpoint_steps

__all__ = ["finished_run"]


def finished_run(run_dir: Path, name: str, steps: int, signed: Any) -> str | None:
    """A one-line notice when the run ``name`` in ``run_dir`` has nothing left to do, else None
    (C5.1). Call it only for a train run with checkpoints on and resumed.

    True when all hold: the newest step directory under ``run_dir/checkpoints`` is exactly
    ``steps``, it holds every file of a complete checkpoint, and its stored config equals
    ``signed`` (what the run's checkpoints sign: ``model``, ``data``, ``optim``, ``train.seed``).
    Any other case (no checkpoint, a smaller step to resume from, a larger one, another config) is
    left to the training loop, which resumes or refuses with its own message. So is a finished
    run whose ``run_dir/report.md`` is missing (killed before writing it): resuming at its final
    step trains nothing and writes the report.
    """
    ckpt = Path(run_dir) / "checkpoints"
    if not ckpt.is_dir() or not (Path(run_dir) / "report.md").is_file():
        return None
    found = checkpoint_steps(Path(run_dir))
    if not found or found[-1] != steps:
        return None
    step_dir = ckpt / str(steps)
    if not all((step_dir / f).is_file() for f in _REQUIRED):
        return None
    try:
        meta = json.loads((step_dir / "meta" / "metadata").read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):  # bad JSON or UTF-8, huge numbers, deep nesting
        return None  # the loop's restore reports the damage
    if not isinstance(meta, dict) or meta.get("config") != json.loads(_config_json(signed)):
        return None
    return (
        f"run {name!r} is already complete: {step_dir} is its final step ({steps}); "
        f"nothing to do (report: {Path(run_dir) / 'report.md'}; raise train.steps to train "
        "further, pass another name=... for a new run, or --overwrite to run it afresh)"
    )
