"""Every entry of tests/ci_full_selection.py names a collected test (issue 35: a renamed test must not
silently come back to the default run, and a pattern must mean what it says)."""

from pathlib import Path

import pytest

from tests import conftest
from tests.ci_full_selection import CI_FULL, pattern_regex, slow_test_ids

TESTS = Path(__file__).resolve().parent


def test_patterns_are_literal_but_for_star_and_question_mark():
    regex = pattern_regex("tests/a.py::test_x[10]")
    assert regex.match("tests/a.py::test_x[10]")
    assert not regex.match("tests/a.py::test_x1")  # fnmatch's [10] class matched this
    assert not regex.match("tests/a.py::test_x[10]b")
    assert pattern_regex("tests/claims/test_c?_*.py::*").match("tests/claims/test_c3_x.py::test_y")
    assert not pattern_regex("tests/claims/test_c?_*.py::*").match("tests/claims/test_ledger.py::t")


def test_every_entry_names_a_collected_test():
    every_file = {str(p.relative_to(TESTS.parent)) for p in TESTS.rglob("test_*.py")}
    if not every_file <= conftest.COLLECTED_FILES:
        pytest.skip("only part of the suite was collected: run it over the whole tests/ folder")
    expected = {p for p, _ in CI_FULL} | set(slow_test_ids())
    assert set(conftest.CI_FULL_MATCHES) == expected
    unmatched = sorted(name for name, n in conftest.CI_FULL_MATCHES.items() if n == 0)
    assert not unmatched, f"ci_full entries that name no collected test: {unmatched}"
