"""Chapter 2 claims: evidence values and the rules that map them to a status."""

import pytest

from jaxparadigm.claims import c2_tensor


@pytest.fixture(scope="module")
def verdicts():
    return {e.claim_id: e.run() for e in (c2_tensor.c2_1, c2_tensor.c2_4, c2_tensor.c2_5)}


def test_c2_1_view_over_storage(verdicts):
    v = verdicts["C2.1"]
    assert v.evidence["ours"] == [[2.0, 3.0, 4.0], [5.0, 6.0, 7.0]]
    assert v.status == "holds"
    bad = dict(v.evidence, ours=[[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]])
    assert c2_tensor.c2_1.verdict_from(bad).status == "fails"


def test_c2_3_rule_from_dispatch_fraction():
    ev = c2_tensor.c2_3.measure()
    assert 0.0 < ev["dispatch_fraction"] <= 1.0 and ev["h2d_ready_s"] > 0
    base = dict(ev, zero_copy_h2d=False)
    base.pop("torch_default_dispatch_fraction", None)
    rule = c2_tensor.c2_3.verdict_from
    assert rule(dict(base, dispatch_fraction=0.1)).status == "holds"
    assert rule(dict(base, dispatch_fraction=0.9)).status == "fails"
    assert rule(dict(base, zero_copy_h2d=True)).status == "conditional"
    with_torch = dict(
        base,
        dispatch_fraction=0.1,
        torch_default_dispatch_fraction=0.95,
        torch_pinned_nonblocking_dispatch_fraction=0.05,
    )
    assert rule(with_torch).status == "conditional"


def test_c2_4_broadcasting(verdicts):
    v = verdicts["C2.4"]
    assert v.evidence["ours"] == [[3, 4], [2, 1, 5]]
    assert v.evidence["random_agreement"] == 1.0
    assert v.status == "holds"
    assert c2_tensor.c2_4.verdict_from(dict(v.evidence, random_agreement=0.99)).status == "fails"


def test_c2_5_set_does_not_write_through(verdicts):
    v = verdicts["C2.5"]
    assert v.evidence["ours_a_after_set_"] == [1, 2, 3]
    assert v.evidence["ours_a_after_copy_"] == [9, 8, 7]
    assert v.evidence["scatter_input_after"] == [1, 2, 3]
    assert v.evidence["scatter_new_buffer"] is True
    assert v.evidence["inplace_result"] == [9, 2, 3]
    assert v.status == "fails"
    if "torch_a_after_set_" in v.evidence:  # our model agrees with real PyTorch
        assert v.evidence["torch_a_after_set_"] == v.evidence["ours_a_after_set_"]
    flipped = dict(v.evidence, ours_a_after_set_=[9, 8, 7])
    flipped.pop("torch_a_after_set_", None)
    assert c2_tensor.c2_5.verdict_from(flipped).status == "holds"
