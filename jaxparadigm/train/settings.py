"""The typed settings of one training run: plain values, built once before the run (C5.1, C5.2).

``train(model, dataset, tx, settings)`` reads nothing else: no config object enters the library.
:func:`jaxparadigm.build.train_settings` maps a project config onto these; a script may build them
by hand.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

from jaxparadigm.train.faults import FaultPlan

__all__ = ["CheckpointSettings", "GuardSettings", "ShardingSettings", "TrainSettings"]


class GuardSettings(NamedTuple):
    """Skip non-finite steps; roll back after ``max_bad_steps`` in a row, the lr scale times
    ``lr_decay_on_rollback``; give up past ``max_rollbacks`` or below ``min_lr_scale``."""

    enabled: bool = True
    max_bad_steps: int = 3
    lr_decay_on_rollback: float = 0.5
    max_rollbacks: int = 10
    min_lr_scale: float = 1e-3


class CheckpointSettings(NamedTuple):
    """Save every ``every`` steps (0: never), keep the last ``keep``; ``resume`` from the newest
    (False: delete the run's old checkpoints); ``signed`` is what the signatures cover."""

    every: int = 0
    keep: int = 3
    resume: bool = True
    signed: Any = None


class ShardingSettings(NamedTuple):
    """Placement mode (``none``, ``data``, ``zero1``, ``fsdp``) and the smallest leaf to split."""

    mode: str = "none"
    min_size: int = 1024


class TrainSettings(NamedTuple):
    """Everything the loop needs besides the built objects (model, data, optimiser)."""

    name: str  # the run's name (progress display)
    run_dir: Path  # metrics.jsonl, plots and checkpoints/ go here
    steps: int  # the data step the run ends at
    batch_size: int  # global batch size (examples per second)
    seed: int = 0
    eval_every: int = 50
    log_every: int = 10
    grad: str = "jax"  # value_and_grad engine: "jax" or "jaxparadigm"
    plots: bool = True
    guard: GuardSettings = GuardSettings()
    checkpoint: CheckpointSettings = CheckpointSettings()
    sharding: ShardingSettings = ShardingSettings()
    faults: FaultPlan = FaultPlan({}, {}, None)
