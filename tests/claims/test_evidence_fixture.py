"""The stored evidence (tests/data/claims/evidence.json) has the structure the experiments produce."""

import json
from pathlib import Path

import pytest

from jaxparadigm.claims.ledger import experiments

EVIDENCE = json.loads(
    (Path(__file__).resolve().parent.parent / "data" / "claims" / "evidence.json").read_text()
)
FAST = ("C1.2", "C2.1", "C2.4", "C2.5", "C3.1", "C3.3", "C4.1", "C4.3")


def leaves(tree, prefix=()):
    """Leaf paths; a PyTorch field is one leaf (a value, or "not measured" without torch)."""
    if isinstance(tree, dict) and not (prefix and str(prefix[-1]).startswith("torch")):
        out = {}
        for k, v in tree.items():
            out.update(leaves(v, (*prefix, k)))
        return out
    return {prefix: type(tree).__name__}


@pytest.mark.parametrize("claim_id", FAST)
def test_fixture_matches_a_fresh_measurement(claim_id):
    fresh = experiments()[claim_id].run().to_json()["evidence"]
    stored = EVIDENCE[claim_id]
    fresh_paths = {p for p in leaves(fresh) if p[0] != "platform"}
    stored_paths = {p for p in leaves(stored) if p[0] != "platform"}
    assert fresh_paths == stored_paths, fresh_paths ^ stored_paths
