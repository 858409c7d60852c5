"""The one metrics writer: JSON lines under ``runs/<name>/metrics.jsonl`` (C5.1, C5.2).

Each record is one JSON object per line (``{"step": ..., "loss": ..., ...}``); arrays become Python
floats/ints/bools. Only process 0 writes (multi-host). ``read_metrics`` reads a file back.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import jax
import numpy as np

__all__ = ["MetricsWriter", "read_metrics"]


def _plain(value):
    arr = np.asarray(jax.device_get(value))
    if arr.ndim:
        return arr.tolist()
    return arr.item()


class MetricsWriter:
    """Append records to a JSON-lines file (truncated first unless ``append``); ``records`` keeps
    this writer's records in memory too (C5.1)."""

    def __init__(self, path: str | os.PathLike, append: bool = False):
        self.path = Path(path)
        self.records: list[dict] = []
        self._enabled = jax.process_index() == 0
        if self._enabled:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if not (append and self.path.exists()):
                self.path.write_text("")

    def write(self, record: dict) -> dict:
        """Convert ``record``'s values to plain Python and append it as one line."""
        plain = {k: _plain(v) for k, v in record.items()}
        self.records.append(plain)
        if self._enabled:
            with self.path.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(plain) + "\n")
        return plain


def read_metrics(path: str | os.PathLike) -> list[dict]:
    """All records of a metrics JSON-lines file."""
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]
