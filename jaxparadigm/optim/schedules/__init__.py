"""Learning-rate schedules ``count -> value`` that clamp their count, so a wrapped counter never
gives a rate outside the range of their arguments (never negative for non-negative ones) (C4.3)."""

from jaxparadigm.optim.schedules.decay import (
    Schedule,
    constant,
    cosine_decay,
    join,
    linear,
    polynomial,
    warmup_cosine_decay,
)
from jaxparadigm.optim.schedules.linear_lr import linear_lr
from jaxparadigm.optim.schedules.overflow import OverflowDemo, overflow_demo

__all__ = [
    "OverflowDemo",
    "Schedule",
    "constant",
    "cosine_decay",
    "join",
    "linear",
    "linear_lr",
    "overflow_demo",
    "polynomial",
    "warmup_cosine_decay",
]
