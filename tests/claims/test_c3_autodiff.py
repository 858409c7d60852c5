"""Chapter 3 claims: measured evidence and the missing-rule probe."""

import pytest

from jaxparadigm.autodiff import registered_primitives
from jaxparadigm.claims import c3_autodiff as c3


@pytest.fixture(scope="module")
def verdicts():
    return {e.claim_id: e.run() for e in (c3.c3_1, c3.c3_2, c3.c3_3)}


def test_c3_1_tape_chain(verdicts):
    v = verdicts["C3.1"]
    assert v.evidence["tape_chain_before_backward"] == {
        "root": "AddBackward",
        "next": ["MulBackward", "PowBackward"],
    }
    assert v.evidence["tape_grad"] == pytest.approx(7.0)
    assert v.status == "holds"


def test_c3_2_probe_is_a_private_primitive_without_rule(verdicts):
    v = verdicts["C3.2"]
    assert v.evidence["unregistered_in_programs"] == []
    assert v.evidence["probe_primitive"] not in registered_primitives()
    assert v.evidence["probe_registered"] is False
    assert v.evidence["probe_primitive"] in v.evidence["probe_error"]
    assert v.status == "holds"


def test_c3_3_grad_of_grad(verdicts):
    v = verdicts["C3.3"]
    assert v.evidence["ours"] == pytest.approx(12.0) == v.evidence["expected"]
    assert v.status == "holds"
