"""``Verdict``: what one claim experiment measured and the status computed from it.

Every experiment is a pair of functions: ``measure() -> evidence`` runs code and returns the
measured values (a JSON-able dict, plus optional figures), and
``decide(evidence) -> (status, summary)`` is a small pure rule that a reader can follow. The status
is never typed in: change the evidence and the status changes.
"""

from __future__ import annotations

import dataclasses
from typing import Any

STATUSES = ("holds", "fails", "conditional")


@dataclasses.dataclass(frozen=True)
class Verdict:
    """The computed verdict for one claim ID of ``docs/CLAIMS.md``.

    ``status`` is ``holds`` (the article's claim is confirmed by the measurement), ``fails`` (it is
    contradicted), or ``conditional`` (true only under conditions the article does not state;
    ``summary`` says which). ``evidence`` holds the measured values the status was computed from;
    ``figures`` maps a figure name to a PNG path (or is empty).
    """

    claim_id: str
    status: str
    summary: str
    evidence: dict[str, Any]
    figures: dict[str, str] = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        if self.status not in STATUSES:
            raise ValueError(
                f"Verdict.status: got {self.status!r} for {self.claim_id}, "
                f"expected one of {STATUSES}"
            )
        if not isinstance(self.evidence, dict):
            raise TypeError(
                f"Verdict.evidence: got {type(self.evidence).__name__}, "
                "expected a dict of measured values"
            )

    def to_json(self) -> dict[str, Any]:
        """A JSON-able dict with keys claim_id, status, summary, evidence (and figures)."""
        return {
            "claim_id": self.claim_id,
            "status": self.status,
            "summary": self.summary,
            "evidence": _jsonable(self.evidence),
            "figures": dict(self.figures),
        }


def _jsonable(value: Any) -> Any:
    """Convert numpy/jax scalars and arrays (and tuples) inside evidence to plain JSON types."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if hasattr(value, "tolist"):  # numpy / jax arrays and scalars
        return _jsonable(value.tolist())
    if isinstance(value, float) and value != value:
        return "nan"
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return repr(value)
