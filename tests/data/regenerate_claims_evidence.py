"""Regenerate tests/data/claims/evidence.json: one real run of every claim experiment, with PyTorch.

Provenance: the evidence dicts of ``jaxparadigm claims --json`` (figures dropped), measured by this
repository's experiments with the optional ``crosscheck`` extra (torch 2.13.0 CPU) installed. The rule
tests in tests/claims/ alter these values field by field; tests/claims/test_evidence_fixture.py checks
that the file still has the structure the experiments produce.

    PYTHONPATH=. python tests/data/regenerate_claims_evidence.py
"""

import json
from pathlib import Path

from jaxparadigm.claims import run_claims
from jaxparadigm.claims.torch_side import torch_or_none

OUT = Path(__file__).resolve().parent / "claims" / "evidence.json"

if __name__ == "__main__":
    if torch_or_none() is None:
        raise SystemExit(
            "install the crosscheck extra (torch) first: the fixture holds PyTorch fields"
        )
    rows = {v.claim_id: v.to_json()["evidence"] for v in run_claims(progress=False)}
    OUT.write_text(json.dumps(rows, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {OUT} ({len(rows)} claims)")
