"""The test tree's own layout (issue 17): every test file name is unique across tests/, so a
failure names one file and the suite also runs where test modules are not imported as packages."""

from collections import Counter
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def test_test_file_names_are_unique():
    names = Counter(p.name for p in TESTS.rglob("test_*.py"))
    assert names, "no test files found"
    assert [name for name, n in names.items() if n > 1] == []
