"""docs/CLAIMS.md lists exactly the ledger's claim IDs, in order."""

import re
from pathlib import Path

from jaxparadigm.claims.ledger import experiments

DOC = Path(__file__).resolve().parents[2] / "docs" / "CLAIMS.md"


def test_claims_doc_matches_the_ledger():
    ids = re.findall(r"^\| (C\d+\.\d+) \|", DOC.read_text(encoding="utf-8"), flags=re.M)
    assert ids == list(experiments())
