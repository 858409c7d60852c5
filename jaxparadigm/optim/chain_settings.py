"""What ``chain_for`` / ``schedule_for`` read: structural types (Protocols), defined in optim.

Any object with these attributes is accepted (``jaxparadigm.config.OptimConfig`` is one, and so is
a NamedTuple of plain values): the optimiser library depends on no config module. Field semantics
are those of :func:`jaxparadigm.optim.chain_for` (C4.1-C4.4).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

__all__ = ["ClipSettings", "LossScaleSettings", "OptimSettings", "ScheduleSettings"]


@runtime_checkable
class ScheduleSettings(Protocol):
    """The learning-rate schedule's name and parameters (peak: ``OptimSettings.learning_rate``)."""

    name: str
    warmup_steps: int
    decay_steps: int
    end_value: float
    power: float
    alpha: float
    start_factor: float
    end_factor: float
    total_iters: int


@runtime_checkable
class ClipSettings(Protocol):
    """The clipping style (``none``, ``global``, ``torch``, ``tf``, ``per_leaf``) and its bound."""

    style: str
    max_norm: float


@runtime_checkable
class LossScaleSettings(Protocol):
    """Dynamic loss scaling: on/off, the initial scale and the growth interval (C4.2)."""

    enabled: bool
    init_scale: float
    growth_interval: int


@runtime_checkable
class OptimSettings(Protocol):
    """The optimiser: direction (``adam``, ``adamw``, ``sgd``, ``adam_torch``), its
    hyperparameters, storage dtypes of Adam's moments, clipping, schedule and loss scaling."""

    name: str
    learning_rate: float
    b1: float
    b2: float
    eps: float
    momentum: float
    nesterov: bool
    weight_decay: float
    mu_dtype: str | None
    nu_dtype: str | None
    clip: ClipSettings
    schedule: ScheduleSettings
    loss_scale: LossScaleSettings
