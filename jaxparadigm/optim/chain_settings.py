"""What ``chain_for`` / ``schedule_for`` read: the optimiser's settings, frozen and checked once.

Each type is a frozen dataclass with its defaults (the values a short CPU run should use) and its
bounds in the type hints (:mod:`jaxparadigm.fields`), checked once in ``__post_init__``: a bad
value is one ``TypeError``/``ValueError`` naming the key path (``optim.b1: got 1.0, expected a
float in [0, 1)``). The config section ``optim`` IS :class:`OptimSettings` (``jaxparadigm.config``
builds it from YAML with the same hints, reporting every problem of a file at once). Field
semantics are those of :func:`jaxparadigm.optim.chain_for` (C4.1-C4.4); the relations between
fields (a warmup shorter than the decay ...) are checked where they are used (``schedule_for``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, ClassVar, Literal

from jaxparadigm.fields import (
    INT32_MAX,
    Bounds,
    Count,
    NonNegative,
    OneOf,
    Positive,
    Rate,
    StorageDtype,
    check_fields,
)
from jaxparadigm.optim.optimisers import OPTIMISERS

__all__ = ["ClipSettings", "LossScaleSettings", "OptimSettings", "ScheduleSettings"]


@dataclass(frozen=True)
class ScheduleSettings:
    """Learning-rate schedule; the peak value is ``optim.learning_rate`` (C4.3)."""

    PATH: ClassVar[str] = "optim.schedule"

    name: Literal[
        "constant", "linear", "polynomial", "cosine_decay", "warmup_cosine_decay", "linear_lr"
    ] = "constant"
    warmup_steps: Annotated[int, Bounds(ge=0, le=INT32_MAX)] = 0
    decay_steps: Count = 1000
    end_value: NonNegative = 0.0
    power: Positive = 1.0
    alpha: Annotated[float, Bounds(ge=0.0, le=1.0)] = 0.0
    start_factor: Annotated[float, Bounds(gt=0.0, le=1.0)] = 1.0 / 3.0
    end_factor: Annotated[float, Bounds(ge=0.0, le=1.0)] = 1.0
    total_iters: Count = 5

    def __post_init__(self) -> None:
        check_fields(self)


@dataclass(frozen=True)
class ClipSettings:
    """Gradient clipping style (C4.4): optax/TF global norm, torch-style, per-leaf, or none."""

    PATH: ClassVar[str] = "optim.clip"

    style: Literal["none", "global", "torch", "tf", "per_leaf"] = "global"
    max_norm: Positive = 1.0

    def __post_init__(self) -> None:
        check_fields(self)


@dataclass(frozen=True)
class LossScaleSettings:
    """Dynamic loss scaling for float16 training (C4.2)."""

    PATH: ClassVar[str] = "optim.loss_scale"

    enabled: bool = False
    init_scale: Annotated[float, Bounds(ge=1.0)] = 2.0**15
    growth_interval: Count = 2000

    def __post_init__(self) -> None:
        check_fields(self)


@dataclass(frozen=True)
class OptimSettings:
    """Optimiser chain: clip -> direction (``name``: a key of
    :data:`~jaxparadigm.optim.optimisers.OPTIMISERS`) -> schedule -> weight decay (C4.1-C4.4)."""

    PATH: ClassVar[str] = "optim"

    name: Annotated[str, OneOf(tuple(OPTIMISERS))] = "adam"
    learning_rate: NonNegative = 1e-3
    b1: Rate = 0.9
    b2: Rate = 0.999
    eps: Positive = 1e-8
    momentum: Rate = 0.0
    nesterov: bool = False
    weight_decay: NonNegative = 0.0
    mu_dtype: StorageDtype | None = None
    nu_dtype: StorageDtype | None = None
    clip: ClipSettings = field(default_factory=ClipSettings)
    schedule: ScheduleSettings = field(default_factory=ScheduleSettings)
    loss_scale: LossScaleSettings = field(default_factory=LossScaleSettings)

    def __post_init__(self) -> None:
        check_fields(self)
