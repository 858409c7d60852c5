"""The claims ledger: one registered experiment per claim ID, run into computed verdicts.

``@experiment("C2.1", "statement")`` registers a ``measure`` function; its ``decide`` rule is
attached with ``@<measure>.decide``. ``run_claims`` runs the selected experiments in ID order and
builds each verdict as ``Verdict(id, *decide(evidence), evidence, figures)`` — the only way a status
is produced. Every evidence dict gets a ``platform`` record (:func:`platform_record`) before the
rule sees it. An experiment registered with ``config="c5_2"`` receives that section of
:class:`ClaimsConfig`.
"""

from __future__ import annotations

import dataclasses
import importlib
import re
import time
from collections.abc import Callable, Iterable
from typing import Any

from jaxparadigm.claims.platform_record import platform_record
from jaxparadigm.claims.verdict import Verdict
from jaxparadigm.common.progress import Progress
from jaxparadigm.config import ClaimsConfig
from jaxparadigm.errors import InputError

# Modules holding the experiments, one per chapter (C2.2 has its own) of the seed article.
EXPERIMENT_MODULES = (
    "jaxparadigm.claims.c1_retrieval",
    "jaxparadigm.claims.c2_tensor",
    "jaxparadigm.claims.c2_saved_tensors",
    "jaxparadigm.claims.c3_autodiff",
    "jaxparadigm.claims.c4_optim",
    "jaxparadigm.claims.c4_clipping",
    "jaxparadigm.claims.c5_engineering",
    "jaxparadigm.claims.c5_service",
)


@dataclasses.dataclass
class Experiment:
    """One claim's experiment: ``measure() -> dict`` and ``decide(evidence) -> (status, summary)``.

    ``measure`` may put a ``"_figures"`` entry ({name: png path}) in its dict; it is moved to
    ``Verdict.figures``. ``config`` names the :class:`ClaimsConfig` section passed to ``measure``.
    """

    claim_id: str
    statement: str
    measure: Callable[..., dict[str, Any]]
    rule: Callable[[dict[str, Any]], tuple[str, str]] | None = None
    config: str | None = None

    def decide(
        self, rule: Callable[[dict[str, Any]], tuple[str, str]]
    ) -> Callable[[dict[str, Any]], tuple[str, str]]:
        """Decorator attaching the pure status rule."""
        self.rule = rule
        return rule

    def run(self, config: ClaimsConfig | None = None) -> Verdict:
        """Measure (with this experiment's config section), add the platform, decide."""
        if self.config is None:
            evidence = dict(self.measure())
        else:
            evidence = dict(self.measure(getattr(config or ClaimsConfig(), self.config)))
        figures = evidence.pop("_figures", {})
        evidence.setdefault("platform", platform_record())
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


def experiment(
    claim_id: str, statement: str, config: str | None = None
) -> Callable[[Callable[..., dict[str, Any]]], Experiment]:
    """Register ``measure`` as the experiment for ``claim_id`` (one per ID)."""
    if config is not None and config not in {f.name for f in dataclasses.fields(ClaimsConfig)}:
        raise ValueError(f"claim {claim_id}: config section {config!r} is not in ClaimsConfig")

    def wrap(measure: Callable[..., dict[str, Any]]) -> Experiment:
        if claim_id in _REGISTRY:
            raise ValueError(f"claim {claim_id}: an experiment is already registered")
        exp = Experiment(claim_id, statement, measure, config=config)
        _REGISTRY[claim_id] = exp
        return exp

    return wrap


def _id_key(claim_id: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", claim_id))


def experiments() -> dict[str, Experiment]:
    """All registered experiments in claim-ID order (the chapter modules imported on first use)."""
    for name in EXPERIMENT_MODULES:
        importlib.import_module(name)
    return {k: _REGISTRY[k] for k in sorted(_REGISTRY, key=_id_key)}


def run_claims(
    only: Iterable[str] | None = None,
    progress: bool = True,
    config: ClaimsConfig | None = None,
) -> list[Verdict]:
    """Run the experiments for ``only`` (claim IDs; all when None) and return their verdicts.

    ``config`` carries the thresholds and load settings (``claims.*``); the article's numbers by
    default. ``progress``: on stderr, a line as each experiment starts
    (``claims: C1.1 (1/23) started``) and one as it finishes with its elapsed time
    (``claims: 1/23 claims, ..., last C1.1 in 12.3 s``), above a bar on a terminal
    (:class:`~jaxparadigm.common.progress.Progress`).
    """
    table = experiments()
    ids = list(table) if only is None else list(only)
    unknown = [i for i in ids if i not in table]
    if unknown:
        raise InputError(f"claim id {unknown[0]!r}: unknown; expected one of {', '.join(table)}")
    bar = Progress(len(ids), "claims", unit="claim", enabled=progress, lines=len(ids))
    out = []
    try:
        for n, claim_id in enumerate(ids, start=1):
            bar.note(f"{claim_id} ({n}/{len(ids)}) started")
            t = time.perf_counter()
            out.append(table[claim_id].run(config))
            bar.update(1, {"last": f"{claim_id} in {time.perf_counter() - t:.1f} s"})
    finally:
        bar.close()
    return out
