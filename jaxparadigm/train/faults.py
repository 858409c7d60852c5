"""Fault injection from the config (``train.faults``): drill the guard, rollback and resume (C5.1).

A :class:`FaultPlan` says, per 0-based data step ``k``:

    batch fault   every floating field of batch k  <- NaN or Inf      (nan_batch / inf_batch)
    grad fault    every gradient element of step k <- NaN or Inf      (nan_grads / inf_grads)
    kill          before step k runs: os.kill(getpid(), SIGKILL)      (kill_at)

NaN wins where a step is listed for both NaN and Inf. The loop logs each injected fault as a
``"fault"`` event before it takes effect, so a drill's metrics tell injected faults from real ones.
"""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass
from typing import ClassVar, NamedTuple

import numpy as np

from jaxparadigm.fields import StepIndex, check_fields

__all__ = ["FaultPlan", "fault_plan", "poison_batch"]


class FaultPlan(NamedTuple):
    """Data step -> injected value (NaN/Inf) for batches and gradients; the kill step or None."""

    batch: dict[int, float]
    grads: dict[int, float]
    kill_at: int | None

    def grad_fault(self, step: int) -> np.float32 | None:
        """The step's gradient fault argument: None when no gradient faults are planned at all
        (the step is compiled without fault code), else NaN/Inf at a planned step and 0 elsewhere."""
        if not self.grads:
            return None
        return np.float32(self.grads.get(step, 0.0))

    @staticmethod
    def kill() -> None:
        """SIGKILL this process now: no cleanup, no ``finally`` blocks, like a power cut."""
        os.kill(os.getpid(), signal.SIGKILL)


def _steps(nan: tuple[int, ...], inf: tuple[int, ...]) -> dict[int, float]:
    return {**dict.fromkeys(inf, float("inf")), **dict.fromkeys(nan, float("nan"))}


@dataclass(frozen=True)
class FaultsSettings:
    """Fault injection for drills of the guard, rollback and resume (C5.1); off by default.

    ``nan_batch``/``inf_batch``: data steps whose float batch fields become NaN/Inf;
    ``nan_grads``/``inf_grads``: data steps whose gradients become NaN/Inf (inside the jitted
    step); ``kill_at``: the process sends itself SIGKILL before running this data step."""

    PATH: ClassVar[str] = "train.faults"

    nan_batch: tuple[StepIndex, ...] = ()
    inf_batch: tuple[StepIndex, ...] = ()
    nan_grads: tuple[StepIndex, ...] = ()
    inf_grads: tuple[StepIndex, ...] = ()
    kill_at: StepIndex | None = None

    def __post_init__(self) -> None:
        check_fields(self)


FaultsSpec = FaultsSettings  # the former name of what fault_plan reads


def fault_plan(faults_cfg: FaultsSettings) -> FaultPlan:
    """The plan of a :class:`FaultsSettings` (the config's ``train.faults``) (C5.1)."""
    f = faults_cfg
    return FaultPlan(
        batch=_steps(f.nan_batch, f.inf_batch),
        grads=_steps(f.nan_grads, f.inf_grads),
        kill_at=f.kill_at,
    )


def poison_batch(batch: dict, value: float) -> dict:
    """``batch`` with every floating-point field filled with ``value``; ValueError if it has none."""
    out = {
        k: np.full_like(v, value) if np.issubdtype(np.asarray(v).dtype, np.floating) else v
        for k, v in batch.items()
    }
    if all(out[k] is batch[k] for k in batch):
        raise ValueError(
            f"batch fault: the batch has no floating-point field to poison (fields "
            f"{', '.join(batch)}); use train.faults.nan_grads / inf_grads"
        )
    return out
