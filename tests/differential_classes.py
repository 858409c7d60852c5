"""Classes and hypothesis profiles of the generated differential tests (issue 23, item 3).

Each generated example makes one or more comparisons of our engine with its oracle; each comparison lands in one class:

* ``equal``: both give the same result, or both refuse the input;
* ``silently_different``: both give a result and they differ, or we give a result where the
  oracle refuses (a wrong answer nobody is told about) -- must be 0;
* ``raised``: we raise where the oracle gives a result -- must be 0, except the documented
  refusals a suite lists by name (counted apart as ``refused:<name>``).

Default run: a fixed, derandomized profile with a bounded number of examples per suite. Long run:
``JAXPARADIGM_FUZZ_EXAMPLES=N pytest -m slow tests/...test_generated_*`` draws ``N`` random
examples per long test. With ``JAXPARADIGM_FUZZ_TALLY=1`` a case outside ``equal`` is counted
instead of failing at once (the suite fails at the end if any was found), which is how the
"before" counts of a fix are taken.
"""

from __future__ import annotations

import collections
import json
import os
import sys
import time

from hypothesis import HealthCheck, settings

EQUAL = "equal"
SILENT = "silently_different"
RAISED = "raised"

LONG_EXAMPLES = int(os.environ.get("JAXPARADIGM_FUZZ_EXAMPLES", "0") or 0)
TALLY_ONLY = os.environ.get("JAXPARADIGM_FUZZ_TALLY", "") not in ("", "0")
_HEALTH = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]


def default_settings(examples: int) -> settings:
    """The CI profile: derandomized (same examples every run), bounded, no example database."""
    return settings(
        max_examples=examples,
        derandomize=True,
        deadline=None,
        database=None,
        suppress_health_check=_HEALTH,
        print_blob=True,
    )


def long_settings(fallback: int) -> settings:
    """The long profile: ``JAXPARADIGM_FUZZ_EXAMPLES`` random examples (``fallback`` if unset)."""
    return settings(
        max_examples=LONG_EXAMPLES or fallback,
        derandomize=False,
        deadline=None,
        database=None,
        suppress_health_check=_HEALTH,
        print_blob=True,
    )


class Tally:
    """Counts per class for one suite; ``check`` fails the example unless tallying only."""

    def __init__(self, suite: str) -> None:
        self.suite = suite
        self.counts: collections.Counter[str] = collections.Counter()
        self.examples = 0
        self.started = time.perf_counter()
        self.failures: dict[str, list[str]] = collections.defaultdict(list)

    def example(self) -> None:
        """Count one generated example (an example makes one or more comparisons)."""
        self.examples += 1

    def record(self, outcome: str, detail: str = "") -> None:
        """Count one comparison; outside ``equal`` (and documented refusals) it fails the example
        unless tallying (then the first few details are kept)."""
        self.counts[outcome] += 1
        if outcome in (SILENT, RAISED):
            if len(self.failures[outcome]) < 8:
                self.failures[outcome].append(detail)
            if not TALLY_ONLY:
                raise AssertionError(f"{self.suite}: {outcome}: {detail}")

    def refused(self, name: str) -> None:
        """A documented refusal, counted by name."""
        self.record(f"refused:{name}")

    def summary(self) -> dict:
        return {
            "suite": self.suite,
            "examples": self.examples,
            "comparisons": sum(self.counts.values()),
            "classes": dict(sorted(self.counts.items())),
            "seconds": round(time.perf_counter() - self.started, 2),
            "first_failures": dict(self.failures),
        }

    def finish(self) -> None:
        """Report the counts (stderr, and appended as a JSON line to ``$JAXPARADIGM_FUZZ_LOG``)
        and fail if anything fell outside ``equal`` and the documented refusals."""
        summary = self.summary()
        print(json.dumps(summary), file=sys.stderr)
        log = os.environ.get("JAXPARADIGM_FUZZ_LOG")
        if log:
            with open(log, "a", encoding="utf-8") as f:
                f.write(json.dumps(summary) + "\n")
        bad = {k: v for k, v in self.counts.items() if k in (SILENT, RAISED)}
        assert not bad, f"{self.suite}: {bad}; first: {dict(self.failures)}"
        assert self.counts[EQUAL] > 0, f"{self.suite}: no case compared equal: {summary}"
