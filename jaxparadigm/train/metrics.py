"""The one metrics writer: JSON lines under ``runs/<name>/metrics.jsonl`` (C5.1, C5.2).

Each record is one JSON object per line (``{"step": ..., "loss": ..., ...}``); arrays become Python
floats/ints/bools. Only process 0 writes (multi-host). ``read_metrics`` reads a file back.

``step`` in a record: for an event (a record with ``"event"``) the 0-based data step it describes;
for any other record (train log, eval) the number of steps completed. A run resumed from a
checkpoint at step ``S`` keeps exactly the records of what happened before ``S``
(:func:`records_before`: events with ``step < S``, others with ``step <= S``), so after the resumed
run has written its own, each step appears once.
"""

from __future__ import annotations

import json
import os
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import numpy as np

__all__ = ["MetricsWriter", "StepClock", "read_metrics", "records_before"]


def _plain(value):
    arr = np.asarray(jax.device_get(value))
    if arr.ndim:
        return arr.tolist()
    return arr.item()


def records_before(records: list[dict], step: int) -> list[dict]:
    """The records describing the first ``step`` steps (events before data step ``step``)."""
    return [r for r in records if r.get("step", 0) < step + (0 if "event" in r else 1)]


class MetricsWriter:
    """Append records to a JSON-lines file; ``records`` keeps this writer's records in memory too.

    ``resume_from=None`` starts the file afresh; ``resume_from=S`` keeps only the file's records of
    the first ``S`` steps (:func:`records_before`) and appends after them (C5.1).
    """

    def __init__(self, path: str | os.PathLike, resume_from: int | None = None) -> None:
        self.path = Path(path)
        self.records: list[dict] = []
        self._enabled = jax.process_index() == 0
        if self._enabled:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            kept = []
            if resume_from is not None and self.path.exists():
                kept = records_before(read_metrics(self.path, damaged="skip"), resume_from)
            tmp = self.path.with_name(self.path.name + ".tmp")  # replaced atomically: a kill
            tmp.write_text("".join(json.dumps(r) + "\n" for r in kept), encoding="utf-8")
            os.replace(tmp, self.path)  # here leaves the old file or the new one, never half

    def write(self, record: dict) -> dict:
        """Convert ``record``'s values to plain Python and append it as one line."""
        plain = {k: _plain(v) for k, v in record.items()}
        self.records.append(plain)
        if self._enabled:
            with self.path.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(plain) + "\n")
        return plain


def read_metrics(path: str | os.PathLike, damaged: str = "raise") -> list[dict]:
    """All records of a metrics JSON-lines file.

    A line that is not a JSON object (e.g. cut short by a killed process) raises ``ValueError``
    naming the file and line, or with ``damaged="skip"`` is dropped with a warning.
    """
    if damaged not in ("raise", "skip"):
        raise ValueError(f"damaged: got {damaged!r}, expected 'raise' or 'skip'")
    out = []
    with open(path, encoding="utf-8") as fh:
        for number, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except (ValueError, RecursionError):  # bad JSON, a 4,300-digit number, deep nesting
                record = None
            if isinstance(record, dict):
                out.append(record)
                continue
            msg = f"metrics file {os.fspath(path)!r} line {number}: not a JSON object record"
            if damaged == "raise":
                raise ValueError(msg)
            warnings.warn(msg + "; dropped", RuntimeWarning, stacklevel=2)
    return out


class StepClock:
    """Host-observed step times (C5.2): throughput and latency percentiles of the steps after the
    first one (which compiles).

    ``steps_per_second = (timed steps) / (end of the last step - end of the first step)``: the rate
    of the steps themselves, the same when read at the last step or after the final evaluation,
    checkpoint and plots (a rate read later, over the time those took too, would be lower than the
    last progress line's); ``latency_ms`` gives the P50 and P99 of the timed steps in milliseconds
    (NaN when none were timed).
    """

    def __init__(self) -> None:
        self.t_first: float | None = None
        self.t_last: float | None = None
        self.times: list[float] = []

    def timed(self, fn: Callable[[], Any]) -> Any:
        """``fn()``, timed unless it is the first call."""
        t = time.perf_counter()
        out = fn()
        end = time.perf_counter()
        if self.t_first is None:
            self.t_first = end
        else:
            self.times.append(end - t)
            self.t_last = end
        return out

    def steps_per_second(self) -> float:
        """Timed steps per second of wall time from the end of the first step to the end of the
        last (0 when none)."""
        if self.t_first is None or self.t_last is None:
            return 0.0
        elapsed = self.t_last - self.t_first
        return len(self.times) / elapsed if elapsed > 0 and self.times else 0.0

    def latency_ms(self) -> dict:
        """``{"p50": ..., "p99": ...}`` of the timed steps in milliseconds."""
        return {
            q: float(np.percentile(self.times, int(q[1:])) * 1e3) if self.times else float("nan")
            for q in ("p50", "p99")
        }
