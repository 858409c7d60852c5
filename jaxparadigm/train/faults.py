"""Fault injection from the config (``train.faults``): drill the guard, rollback and resume (C5.1).

A :class:`FaultPlan` says, per 0-based data step ``k``:

    batch fault   every floating field of batch k  <- NaN or Inf      (nan_batch / inf_batch)
    grad fault    every gradient element of step k <- NaN or Inf      (nan_grads / inf_grads)
    kill          before step k runs: os.kill(getpid(), SIGKILL)      (kill_at)

NaN wins where a step is listed for both NaN and Inf. The loop logs each injected fault as a
``"fault"`` event before it takes effect, so a drill's metrics tell injected faults from real ones.

Save points (test-only: the kill matrix of ``tests/train/test_checkpoint_kill_matrix.py``): inside
:func:`watching_save` (around each ``Checkpointer.save``) every file operation Python makes in the
checkpoint directory (a file opened for writing, mkdir, rename/replace, remove, rmtree:
``sys.addaudithook`` events, so orbax's own writes count), every orbax barrier
(``sync_global_processes``) and the checkpointer's own points (``begin``, ``saved``, ``done``) is a
*save point*, numbered 0, 1, ... within the save of one step. With the environment variable
``JAXPARADIGM_FAULT_SAVE_POINT=STEP:J@P`` process ``P`` kills itself with SIGKILL
(:meth:`FaultPlan.kill`) just before save point ``J`` of the save of step ``STEP``; with
``JAXPARADIGM_SAVE_POINT_LOG=FILE`` each point is appended to ``FILE`` as ``P STEP J NAME``. Neither
set (the normal case): no hook, nothing counted. Writes inside tensorstore's C++ (the arrays' bytes,
their fsync) make no Python event: the points before and after them (the barrier that follows the
writes) stand for them.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import ClassVar, NamedTuple

import numpy as np

from jaxparadigm.fields import StepIndex, check_fields

__all__ = [
    "SAVE_POINT_ENV",
    "SAVE_POINT_LOG_ENV",
    "FaultPlan",
    "fault_plan",
    "poison_batch",
    "save_point",
    "watching_save",
]

#: ``STEP:J@P``: process P SIGKILLs itself before save point J of the save of step STEP (tests).
SAVE_POINT_ENV = "JAXPARADIGM_FAULT_SAVE_POINT"
#: A file each save point is appended to as ``P STEP J NAME`` (tests: the matrix's point list).
SAVE_POINT_LOG_ENV = "JAXPARADIGM_SAVE_POINT_LOG"


class FaultPlan(NamedTuple):
    """Data step -> injected value (NaN/Inf) for batches and gradients; the kill step or None."""

    batch: dict[int, float]
    grads: dict[int, float]
    kill_at: int | None

    def grad_fault(self, step: int) -> np.float32 | None:
        """The step's gradient fault argument: None when no gradient faults are planned at all (the
        step is compiled without fault code), else NaN/Inf at a planned step and 0 elsewhere."""
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
    """``batch`` with every float field filled with ``value``; ValueError if it has none."""
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


_WRITES = {"os.mkdir", "os.rename", "os.replace", "os.remove", "os.unlink", "os.rmdir"}
_SAVE: dict = {"root": None, "step": None, "count": 0}
_SAVE_LOCK = threading.RLock()
_HOOKED: list[bool] = []


def _process() -> int:
    return int(os.environ.get("JAXPARADIGM_PROCESS_ID", "0") or 0)


def save_point(name: str) -> None:
    """Count save point ``name`` of the save being watched; log it and SIGKILL this process when
    the environment asks (see the module docstring). Outside :func:`watching_save`: nothing."""
    with _SAVE_LOCK:
        if _SAVE["root"] is None:
            return
        step, j = _SAVE["step"], _SAVE["count"]
        _SAVE["count"] = j + 1
        root, _SAVE["root"] = _SAVE["root"], None  # the log's own open is no save point
        try:
            log = os.environ.get(SAVE_POINT_LOG_ENV)
            if log:
                with open(log, "a", encoding="utf-8") as f:
                    f.write(f"{_process()} {step} {j} {name}\n")
        finally:
            _SAVE["root"] = root
        if os.environ.get(SAVE_POINT_ENV) == f"{step}:{j}@{_process()}":
            FaultPlan.kill()


def _audit(event: str, args: tuple) -> None:
    """The audit hook: a file operation under the watched directory is a save point."""
    root = _SAVE["root"]
    if root is None or not (event in _WRITES or event in ("open", "shutil.rmtree")):
        return
    path = args[0] if args else None
    if not isinstance(path, str | bytes | os.PathLike):
        return
    path = os.fsdecode(path)
    if not os.path.abspath(path).startswith(root + os.sep):
        return
    if event == "open":
        mode, flags = args[1], args[2]
        if not (isinstance(mode, str) and set(mode) & set("wax+")) and not (
            isinstance(flags, int) and flags & (os.O_WRONLY | os.O_RDWR)
        ):
            return  # a read
        event = "open-for-write"
    rel = re.sub(r"\d{6,}", "N", os.path.relpath(path, root))  # orbax's tmp suffixes: timestamps
    save_point(f"{event} {rel}")


@contextlib.contextmanager
def watching_save(directory: str, step: int) -> Iterator[None]:
    """Within the block, the save of ``step`` into ``directory`` has numbered save points (when
    :data:`SAVE_POINT_ENV` or :data:`SAVE_POINT_LOG_ENV` is set; else the block runs as is)."""
    if not (os.environ.get(SAVE_POINT_ENV) or os.environ.get(SAVE_POINT_LOG_ENV)):
        yield
        return
    from orbax.checkpoint._src.multihost import multihost

    if not _HOOKED:  # an audit hook cannot be removed: installed once, idle outside a save
        sys.addaudithook(_audit)
        _HOOKED.append(True)
    barrier = multihost.sync_global_processes

    def watched_barrier(name: str, *args, **kwargs):
        save_point(f"barrier {re.sub(r'[0-9]{6,}', 'N', name)}")
        return barrier(name, *args, **kwargs)

    with _SAVE_LOCK:
        _SAVE.update(root=os.path.abspath(directory), step=step, count=0)
    multihost.sync_global_processes = watched_barrier
    try:
        save_point("begin")
        yield
        save_point("done")
    finally:
        multihost.sync_global_processes = barrier
        with _SAVE_LOCK:
            _SAVE.update(root=None, step=None)
