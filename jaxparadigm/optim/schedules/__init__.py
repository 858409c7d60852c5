"""Learning-rate schedules ``count -> value`` that never overflow into negative rates (C4.3)."""

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
