"""What ``chain_for`` / ``schedule_for`` read: structural types (Protocols), defined in optim.

Any object with these attributes is accepted (``jaxparadigm.config.OptimConfig`` is one, and so is
a NamedTuple of plain values): the optimiser library depends on no config module. Field semantics
are those of :func:`jaxparadigm.optim.chain_for` (C4.1-C4.4). Members are read-only properties, so
frozen dataclasses and NamedTuples match them for a type checker too.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

__all__ = ["ClipSettings", "LossScaleSettings", "OptimSettings", "ScheduleSettings"]


@runtime_checkable
class ScheduleSettings(Protocol):
    """The learning-rate schedule's name and parameters (peak: ``OptimSettings.learning_rate``)."""

    @property
    def name(self) -> str: ...
    @property
    def warmup_steps(self) -> int: ...
    @property
    def decay_steps(self) -> int: ...
    @property
    def end_value(self) -> float: ...
    @property
    def power(self) -> float: ...
    @property
    def alpha(self) -> float: ...
    @property
    def start_factor(self) -> float: ...
    @property
    def end_factor(self) -> float: ...
    @property
    def total_iters(self) -> int: ...


@runtime_checkable
class ClipSettings(Protocol):
    """The clipping style (``none``, ``global``, ``torch``, ``tf``, ``per_leaf``) and its bound."""

    @property
    def style(self) -> str: ...
    @property
    def max_norm(self) -> float: ...


@runtime_checkable
class LossScaleSettings(Protocol):
    """Dynamic loss scaling: on/off, the initial scale and the growth interval (C4.2)."""

    @property
    def enabled(self) -> bool: ...
    @property
    def init_scale(self) -> float: ...
    @property
    def growth_interval(self) -> int: ...


@runtime_checkable
class OptimSettings(Protocol):
    """The optimiser: direction (``adam``, ``adamw``, ``sgd``, ``adam_torch``), its
    hyperparameters, storage dtypes of Adam's moments, clipping, schedule and loss scaling."""

    @property
    def name(self) -> str: ...
    @property
    def learning_rate(self) -> float: ...
    @property
    def b1(self) -> float: ...
    @property
    def b2(self) -> float: ...
    @property
    def eps(self) -> float: ...
    @property
    def momentum(self) -> float: ...
    @property
    def nesterov(self) -> bool: ...
    @property
    def weight_decay(self) -> float: ...
    @property
    def mu_dtype(self) -> str | None: ...
    @property
    def nu_dtype(self) -> str | None: ...
    @property
    def clip(self) -> ClipSettings: ...
    @property
    def schedule(self) -> ScheduleSettings: ...
    @property
    def loss_scale(self) -> LossScaleSettings: ...
