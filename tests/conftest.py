"""Test-session setup: CPU only, with 4 forced host devices so chex's ``with_pmap`` variants and
sharding tests have several devices. Must run before JAX initialises its backend."""

import os
import sys
from pathlib import Path

# Test modules import each other as ``tests.<area>.<module>``: put this checkout's root first on
# sys.path, so that ``tests`` (and ``jaxparadigm``) resolve to it from any working directory and
# under any ``--import-mode``.
_ROOT = str(Path(__file__).resolve().parent.parent)
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

os.environ.setdefault("JAX_PLATFORMS", "cpu")
#: ``XLA_FLAGS`` as the user's environment had it, before the forced devices below (None: unset):
#: the README test runs the README's commands with it, as a user would.
USER_XLA_FLAGS = os.environ.get("XLA_FLAGS")
_flags = USER_XLA_FLAGS or ""
if "xla_force_host_platform_device_count" not in _flags:
    os.environ["XLA_FLAGS"] = (_flags + " --xla_force_host_platform_device_count=4").strip()

import jax  # noqa: E402

jax.config.update("jax_enable_x64", False)


# --- oracle report (issue 11): how many PyTorch / transformers cross-checks really ran -------------
ORACLES = ("torch", "transformers", "sentence_transformers")
_REPORTS: dict[str, list] = {"crosscheck": [], "oracle_missing": []}


def _oracle_skip(report) -> bool:
    reason = str(report.longrepr[-1]) if isinstance(report.longrepr, tuple) else ""
    return any(f"could not import '{name}'" in reason for name in ORACLES)


def pytest_runtest_logreport(report):
    if report.when == "call" or (report.when == "setup" and not report.passed):
        if "crosscheck" in report.keywords:
            _REPORTS["crosscheck"].append(report.outcome)
        if report.skipped and _oracle_skip(report):
            _REPORTS["oracle_missing"].append(report.nodeid)


def _require_oracles() -> bool:
    return os.environ.get("JAXPARADIGM_REQUIRE_ORACLES", "") not in ("", "0")


def pytest_sessionfinish(session):
    """With JAXPARADIGM_REQUIRE_ORACLES=1 (CI installs the oracles) an oracle skip fails the run."""
    if _REPORTS["oracle_missing"] and _require_oracles() and session.exitstatus == 0:
        session.exitstatus = 1


def pytest_terminal_summary(terminalreporter):
    """How many crosscheck-marked tests passed, failed or were skipped, and which tests were skipped
    because an oracle package (torch, transformers, sentence-transformers) is missing."""
    outcomes = _REPORTS["crosscheck"]
    missing = _REPORTS["oracle_missing"]
    terminalreporter.write_line(
        f"crosscheck-marked tests: {outcomes.count('passed')} ran and passed, "
        f"{outcomes.count('failed')} failed, {outcomes.count('skipped')} skipped; "
        f"tests skipped for a missing oracle package: {len(missing)}"
    )
    for nodeid in missing:
        terminalreporter.write_line(f"  oracle missing: {nodeid}")
    if missing and _require_oracles():
        terminalreporter.write_line("JAXPARADIGM_REQUIRE_ORACLES is set: oracle skips fail the run")


# --- issues 25, 35: tests moved from the default run to CI's full run (tests/ci_full_selection.py) --
import pytest  # noqa: E402

from tests.ci_full_selection import CI_FULL, pattern_regex, slow_test_ids  # noqa: E402

#: What the collection matched: each CI_FULL pattern and slow-test id -> how many tests it named,
#: and the test files collected (tests/test_ci_full_selection.py reads both).
CI_FULL_MATCHES: dict[str, int] = {}
COLLECTED_FILES: set[str] = set()


@pytest.hookimpl(tryfirst=True)  # before -m deselects by marker
def pytest_collection_modifyitems(config, items):
    """Mark the tests :mod:`tests.ci_full_selection` names with ``ci_full``."""
    patterns = [(p, pattern_regex(p)) for p, _why in CI_FULL]
    slow = set(slow_test_ids())
    CI_FULL_MATCHES.clear()
    CI_FULL_MATCHES.update({p: 0 for p, _ in patterns} | {i: 0 for i in slow})
    for item in items:
        COLLECTED_FILES.add(item.nodeid.split("::", 1)[0])
        named = [p for p, regex in patterns if regex.match(item.nodeid)]
        if item.nodeid in slow:
            named.append(item.nodeid)
        for name in named:
            CI_FULL_MATCHES[name] += 1
        if named:
            item.add_marker(pytest.mark.ci_full)
