"""The claims ledger: every checkable claim of the seed article run as an experiment (all IDs).

``run_claims(only=None)`` -> list of :class:`Verdict`; ``format_table``, ``verdicts_to_json`` and
``write_report`` render them. Experiments live in one module per chapter (``c1_retrieval`` ...
``c5_engineering``); each is a ``measure`` function plus a pure ``decide`` rule.
"""

from jaxparadigm.claims.ledger import Experiment, experiment, experiments, run_claims
from jaxparadigm.claims.report import (
    article_errata,
    format_table,
    update_readme,
    verdicts_to_json,
    write_report,
)
from jaxparadigm.claims.verdict import STATUSES, Verdict

__all__ = [
    "STATUSES",
    "Experiment",
    "Verdict",
    "article_errata",
    "experiment",
    "experiments",
    "format_table",
    "run_claims",
    "update_readme",
    "verdicts_to_json",
    "write_report",
]
