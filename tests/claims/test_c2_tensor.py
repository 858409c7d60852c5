"""Chapter 2 claims: measured evidence, both with PyTorch and with ``JAXPARADIGM_NO_TORCH``."""

import pytest

from jaxparadigm.claims import c2_saved_tensors, c2_tensor
from jaxparadigm.claims.torch_side import NOT_MEASURED
from tests.claims.conftest import require_torch, run_experiments

EXPERIMENTS = (c2_tensor.c2_1, c2_saved_tensors.c2_2, c2_tensor.c2_4, c2_tensor.c2_5)


@pytest.fixture(scope="module")
def verdicts():
    return run_experiments(EXPERIMENTS)


@pytest.fixture(scope="module")
def verdicts_without_torch():
    return run_experiments(EXPERIMENTS, no_torch=True)


def test_c2_1_view_over_storage(verdicts):
    v = verdicts["C2.1"]
    assert v.evidence["ours"] == [[2.0, 3.0, 4.0], [5.0, 6.0, 7.0]]
    assert v.evidence["numpy"] == v.evidence["expected"]
    assert v.status == "holds"


def test_c2_3_measures_the_transfer():
    ev = c2_tensor.c2_3.measure()
    assert 0.0 < ev["dispatch_fraction"] <= 1.0 and ev["h2d_ready_s"] > 0
    assert ev["torch_default_dispatch_fraction"] == NOT_MEASURED  # no CUDA device in tests


def test_c2_4_broadcasting(verdicts):
    v = verdicts["C2.4"]
    assert v.evidence["ours"] == [[3, 4], [2, 1, 5]]
    assert v.evidence["random_agreements"] == v.evidence["random_trials"] == 2000


def test_c2_5_scatter_and_set(verdicts):
    v = verdicts["C2.5"]
    assert v.evidence["ours_a_after_set_"] == [1, 2, 3]
    assert v.evidence["ours_a_after_copy_"] == [9, 8, 7]
    assert v.evidence["scatter_input_after"] == [1, 2, 3]
    assert v.evidence["scatter_new_buffer"] is True
    assert v.evidence["inplace_result"] == [9, 2, 3]


@pytest.mark.crosscheck
def test_with_torch_the_article_snippets_decide(verdicts):
    require_torch()
    assert verdicts["C2.1"].evidence["torch"] == verdicts["C2.1"].evidence["expected"]
    assert verdicts["C2.2"].status == "holds"
    assert verdicts["C2.4"].status == "holds"
    v = verdicts["C2.5"]
    assert v.evidence["torch_a_after_set_"] == [1, 2, 3]
    assert v.status == "fails"
    assert f"a -> {v.evidence['torch_a_after_copy_']}" in v.summary  # PyTorch's copy_, measured
    assert "NOT observed" not in v.summary


def test_without_torch_nothing_is_taken_from_our_model(verdicts_without_torch):
    vs = verdicts_without_torch
    assert vs["C2.1"].evidence["torch"] == NOT_MEASURED and vs["C2.1"].status == "holds"
    for cid in ("C2.2", "C2.4", "C2.5"):
        assert vs[cid].status == "conditional", cid
        assert "PyTorch side not measured" in vs[cid].summary, cid
    assert vs["C2.5"].evidence["torch_a_after_set_"] == NOT_MEASURED
    assert "our Memory model" not in vs["C2.5"].summary.lower()
    assert vs["C2.2"].evidence["torch_saved_alive_after"] == NOT_MEASURED
    assert vs["C2.1"].evidence["platform"]["versions"]["torch"] == NOT_MEASURED


def test_c2_2_residuals(verdicts):
    ev = verdicts["C2.2"].evidence
    assert ev["tape_saved_before_backward"] > 0 and ev["tape_saved_after_backward"] == 0
    assert ev["function_residual_bytes_no_save"] < ev["function_residual_bytes_saving_x"]
