"""Chapter 3 claims (and C2.2): evidence values and the rules that map them to a status."""

import pytest

from jaxparadigm.claims import c3_autodiff as c3


@pytest.fixture(scope="module")
def verdicts():
    return {e.claim_id: e.run() for e in (c3.c2_2, c3.c3_1, c3.c3_2, c3.c3_3)}


def test_c2_2_saved_tensors_released(verdicts):
    v = verdicts["C2.2"]
    assert v.evidence["tape_saved_before_backward"] > 0
    assert v.evidence["tape_saved_after_backward"] == 0
    assert (
        v.evidence["function_residual_bytes_no_save"]
        < v.evidence["function_residual_bytes_saving_x"]
    )
    assert v.status == "holds"
    leaked = dict(v.evidence, tape_saved_after_backward=2)
    assert c3.c2_2.verdict_from(leaked).status == "fails"


def test_c3_1_tape_chain(verdicts):
    v = verdicts["C3.1"]
    assert v.evidence["tape_chain_before_backward"] == {
        "root": "AddBackward",
        "next": ["MulBackward", "PowBackward"],
    }
    assert v.evidence["tape_grad_at_2"] == pytest.approx(7.0)
    assert v.status == "holds"
    assert c3.c3_1.verdict_from(dict(v.evidence, tape_grad_at_2=6.0)).status == "fails"


def test_c3_2_registry_covers_programs(verdicts):
    v = verdicts["C3.2"]
    assert v.evidence["unregistered_in_programs"] == []
    assert max(v.evidence["max_rel_error_vs_jax_grad"].values()) <= 1e-6
    assert v.status == "holds"
    gap = dict(v.evidence, unregistered_in_programs=["dot_general"])
    assert c3.c3_2.verdict_from(gap).status == "fails"


def test_c3_3_grad_of_grad(verdicts):
    v = verdicts["C3.3"]
    assert v.evidence["ours_at_2"] == pytest.approx(12.0)
    assert v.status == "holds"
    flat = dict(v.evidence, equations_per_order=[2, 2, 2, 2])
    assert c3.c3_3.verdict_from(flat).status == "fails"
