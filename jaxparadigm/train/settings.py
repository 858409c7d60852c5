"""The typed settings of one training run: frozen, checked once, built before the run (C5.1, C5.2).

``train(model, dataset, tx, settings)`` reads nothing else: no config object enters the library.
Each concern is a frozen dataclass with its defaults and its bounds in the type hints
(:mod:`jaxparadigm.fields`), checked once in ``__post_init__`` (one ``TypeError``/``ValueError``
naming the key path, e.g. ``train.guard.max_bad_steps: got 0, expected an int >= 1``). The project's
config sections ARE these types (``train.guard`` is a :class:`GuardSettings`, ``data`` a
:class:`DataSettings` ...); :func:`jaxparadigm.build.train_settings` assembles a
:class:`TrainSettings` from a config by keyword; a script may build them by hand.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

from jaxparadigm.fields import INT32_MAX, Bounds, Count, Seed, check_fields
from jaxparadigm.train.faults import FaultPlan

__all__ = [
    "CheckpointSettings",
    "GuardSettings",
    "ShardingSettings",
    "TrainSettings",
]


@dataclass(frozen=True)
class GuardSettings:
    """Skip non-finite steps; roll back after ``max_bad_steps`` consecutive bad steps (C5.1).

    A rollback multiplies the learning-rate scale by ``lr_decay_on_rollback``. Give-up rule: a
    rollback that would be number ``max_rollbacks + 1``, or would lower the learning-rate scale
    below ``min_lr_scale``, ends the run with ``TrainingAborted`` instead (so the scale never
    reaches 0)."""

    PATH: ClassVar[str] = "train.guard"

    enabled: bool = True
    max_bad_steps: Annotated[int, Bounds(ge=1)] = 3
    lr_decay_on_rollback: Annotated[float, Bounds(gt=0.0, le=1.0)] = 0.5
    max_rollbacks: Annotated[int, Bounds(ge=0)] = 10
    min_lr_scale: Annotated[float, Bounds(ge=1e-30, le=1.0)] = 1e-3

    def __post_init__(self) -> None:
        check_fields(self)


@dataclass(frozen=True)
class CheckpointSettings:
    """Signed orbax checkpoints every ``every`` steps (0 disables), keeping the last ``keep``.

    ``resume``: continue from the newest checkpoint in the run directory (false: start afresh and
    delete the run's old checkpoints). What the signatures cover is ``TrainSettings.signed``."""

    PATH: ClassVar[str] = "train.checkpoint"

    every: Annotated[int, Bounds(ge=0, le=INT32_MAX)] = 0
    keep: Annotated[int, Bounds(ge=1)] = 3
    resume: bool = True

    def __post_init__(self) -> None:
        check_fields(self)


@dataclass(frozen=True)
class ShardingSettings:
    """Placement over all devices of all processes (C4.1, C5.2; ``jaxparadigm.train.sharding``).

    ``none``: one device; ``data``: state replicated, batch split; ``zero1``: optimiser state split
    too; ``fsdp``: parameters and optimiser state split. A leaf with fewer than ``min_size``
    elements (or no dimension divisible by the device count) stays replicated.
    ``fsdp_tensor``: a 2-D mesh ``(fsdp, tensor)`` of ``devices / tensor`` x ``tensor`` devices;
    parameters (and their optimiser state) are laid out by their logical axis names (attention
    heads and MLP hidden units over ``tensor``, the model width over ``fsdp``), the batch over
    ``fsdp``. ``tensor`` is read by ``fsdp_tensor`` only."""

    PATH: ClassVar[str] = "train.sharding"

    mode: Literal["none", "data", "zero1", "fsdp", "fsdp_tensor"] = "none"
    min_size: Annotated[int, Bounds(ge=1)] = 1024
    tensor: Annotated[int, Bounds(ge=1)] = 1

    def __post_init__(self) -> None:
        check_fields(self)


@dataclass(frozen=True)
class TrainSettings:
    """Everything the loop needs besides the built objects (model, data, optimiser), checked once
    when built (one ``TypeError``/``ValueError`` naming ``settings.<field>``)."""

    PATH: ClassVar[str] = "settings"

    name: str  # the run's name (progress display)
    run_dir: Path  # metrics.jsonl, plots and checkpoints/ go here
    steps: Count  # the data step the run ends at
    batch_size: Annotated[int, Bounds(ge=1)]  # global batch size (examples per second)
    seed: Seed = 0
    eval_every: Count = 50
    log_every: Count = 10
    grad: Literal["jax", "jaxparadigm"] = "jax"  # value_and_grad engine
    plots: bool = True
    guard: GuardSettings = field(default_factory=GuardSettings)
    checkpoint: CheckpointSettings = field(default_factory=CheckpointSettings)
    sharding: ShardingSettings = field(default_factory=ShardingSettings)
    faults: FaultPlan = field(default_factory=lambda: FaultPlan({}, {}, None))
    signed: Any = None  # what the checkpoint signatures cover (``signed_config`` of a config)

    def __post_init__(self) -> None:
        check_fields(self)
