"""The claims ledger: one registered experiment per claim ID, run into computed :class:`Verdict`s.

``@experiment("C2.1", "statement")`` registers a ``measure`` function; its ``decide`` rule is attached with
``@<measure>.decide``. ``run_claims`` runs the selected experiments in ID order and builds each verdict as
``Verdict(id, *decide(evidence), evidence, figures)`` — the only way a status is produced.
"""

from __future__ import annotations

import dataclasses
import importlib
import re
from collections.abc import Callable, Iterable
from typing import Any

from tqdm.auto import tqdm

from jaxparadigm.claims.verdict import Verdict
from jaxparadigm.errors import InputError

# Modules holding the experiments, one per chapter of the seed article.
EXPERIMENT_MODULES = (
    "jaxparadigm.claims.c1_retrieval",
    "jaxparadigm.claims.c2_tensor",
    "jaxparadigm.claims.c3_autodiff",
    "jaxparadigm.claims.c4_optim",
    "jaxparadigm.claims.c5_engineering",
)


@dataclasses.dataclass
class Experiment:
    """One claim's experiment: ``measure() -> dict`` and ``decide(evidence) -> (status, summary)``.

    ``measure`` may put a ``"_figures"`` entry ({name: png path}) in its dict; it is moved to
    ``Verdict.figures``.
    """

    claim_id: str
    statement: str
    measure: Callable[[], dict[str, Any]]
    rule: Callable[[dict[str, Any]], tuple[str, str]] | None = None

    def decide(self, rule: Callable[[dict[str, Any]], tuple[str, str]]):
        """Decorator attaching the pure status rule."""
        self.rule = rule
        return rule

    def run(self) -> Verdict:
        evidence = dict(self.measure())
        figures = evidence.pop("_figures", {})
        return self.verdict_from(evidence, figures)

    def verdict_from(
        self, evidence: dict[str, Any], figures: dict[str, str] | None = None
    ) -> Verdict:
        """Apply the rule to (possibly altered) evidence — used by tests of the rule."""
        if self.rule is None:
            raise RuntimeError(f"claim {self.claim_id}: experiment has no decide rule")
        status, summary = self.rule(evidence)
        return Verdict(self.claim_id, status, summary, evidence, dict(figures or {}))


_REGISTRY: dict[str, Experiment] = {}


def experiment(claim_id: str, statement: str):
    """Register ``measure`` as the experiment for ``claim_id`` (one per ID)."""

    def wrap(measure: Callable[[], dict[str, Any]]) -> Experiment:
        if claim_id in _REGISTRY:
            raise ValueError(f"claim {claim_id}: an experiment is already registered")
        exp = Experiment(claim_id, statement, measure)
        _REGISTRY[claim_id] = exp
        return exp

    return wrap


def _id_key(claim_id: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", claim_id))


def experiments() -> dict[str, Experiment]:
    """All registered experiments, in claim-ID order (importing the chapter modules on first use)."""
    for name in EXPERIMENT_MODULES:
        importlib.import_module(name)
    return {k: _REGISTRY[k] for k in sorted(_REGISTRY, key=_id_key)}


def run_claims(only: Iterable[str] | None = None, progress: bool = True) -> list[Verdict]:
    """Run the experiments for ``only`` (claim IDs; all when None) and return their verdicts."""
    table = experiments()
    ids = list(table) if only is None else list(only)
    unknown = [i for i in ids if i not in table]
    if unknown:
        raise InputError(f"claim id {unknown[0]!r}: unknown; expected one of {', '.join(table)}")
    out = []
    bar = tqdm(ids, desc="claims", disable=not progress, leave=False)
    for claim_id in bar:
        bar.set_postfix_str(claim_id)
        out.append(table[claim_id].run())
    return out
