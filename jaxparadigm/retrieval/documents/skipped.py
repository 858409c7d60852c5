"""What a reading of files skipped, and why: the reasons, one record per input, the report (C1.1).

An unusable input never stops a reading: it becomes a :class:`Skipped` with one of
:data:`SKIP_REASONS` and a detail; :func:`describe_skipped` turns a list of them into the lines a
report prints (``skipped N inputs (reason: count, ...)`` then the first few).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import NamedTuple

from jaxparadigm.common.quoting import plural

__all__ = ["SKIP_REASONS", "Skipped", "describe_skipped"]


SKIP_REASONS = (
    "unreadable",
    "empty",
    "duplicate content",
    "already indexed",
    "not UTF-8",
    "bad JSONL line",
    "dangling symlink",
    "unsupported type",
    "symlinked folder",
    "name not UTF-8",
    "symlink loop",
    "index folder",
    "too large",
)


class Skipped(NamedTuple):
    """An input that gave no document: ``path`` (real path, or ``path:LINE``), reason, detail."""

    path: str
    reason: str
    detail: str


def describe_skipped(skipped: Sequence[Skipped], limit: int = 10) -> list[str]:
    """Lines for a report: ``skipped N inputs (reason: count, ...)`` then up to ``limit`` items
    (C1.1)."""
    if not skipped:
        return []
    counts = Counter(s.reason for s in skipped)
    head = f"skipped {plural(len(skipped), 'input')} (" + ", ".join(
        f"{reason}: {counts[reason]}" for reason in SKIP_REASONS if reason in counts
    )
    lines = [head + ")"]
    lines += [f"  {s.path}: {s.reason} ({s.detail})" for s in skipped[:limit]]
    if len(skipped) > limit:
        lines.append(f"  ... and {len(skipped) - limit} more")
    return lines
