"""Chapter 4 claims: evidence values and the rules that map them to a status."""

from pathlib import Path

import pytest

from jaxparadigm.claims import c4_optim as c4


@pytest.fixture(scope="module")
def verdicts():
    return {e.claim_id: e.run() for e in (c4.c4_1, c4.c4_2, c4.c4_3, c4.c4_4)}


def test_c4_1_sgd_step(verdicts):
    v = verdicts["C4.1"]
    assert v.evidence["max_abs_error_vs_formula"] <= 1e-6
    assert v.evidence["zero_grad_param_moved_with_weight_decay"] == pytest.approx(
        0.1 * 0.01 * 0.5, rel=1e-4
    )
    assert v.status == "conditional"
    still = dict(v.evidence, zero_grad_param_moved_with_weight_decay=0.0)
    assert c4.c4_1.verdict_from(still).status == "holds"
    assert c4.c4_1.verdict_from(dict(v.evidence, max_abs_error_vs_formula=1.0)).status == "fails"


def test_c4_2_fp16_nu_underflows(verdicts):
    v = verdicts["C4.2"]
    assert v.evidence["nu_float16"]["nu_underflow_fraction"] > 0.1
    assert v.evidence["nu_bfloat16"]["nu_underflow_fraction"] == 0.0
    assert v.evidence["nu_float16"]["nu_bytes"] * 2 == v.evidence["nu_float32"]["nu_bytes"]
    assert v.evidence["nu_float32"]["mu_dtype"] == "float32"
    assert v.status == "fails"
    assert Path(v.figures["nu_underflow"]).is_file()
    harmless = dict(
        v.evidence, nu_float16=dict(v.evidence["nu_float16"], nu_underflow_fraction=0.0)
    )
    harmless = {k: x for k, x in harmless.items() if not k.startswith("torch_")}
    assert c4.c4_2.verdict_from(harmless).status == "holds"


def test_c4_3_counter_overflow(verdicts):
    v = verdicts["C4.3"]
    assert min(v.evidence["naive_int32_count"]) == -(2**31)
    assert min(v.evidence["safe_int32_count"]) == 2**31 - 1 - 3
    assert min(v.evidence["lr_linear_formula_on_naive_counter"]) < 0
    assert min(v.evidence["lr_safe_counter"]) > 0
    assert v.status == "conditional"
    assert max(v.evidence["python_int_counter"]) > 2**31 - 1
    assert min(v.evidence["lr_linear_formula_on_python_int_counter"]) > 0
    negative = dict(v.evidence, torch_linear_lr=[-1.0], torch_last_epoch=[2**31])
    assert c4.c4_3.verdict_from(negative).status == "holds"
    no_torch = {k: x for k, x in v.evidence.items() if not k.startswith("torch_")}
    assert c4.c4_3.verdict_from(no_torch).status == "conditional"
    wraps = dict(no_torch, lr_linear_formula_on_python_int_counter=[-1.0])
    assert c4.c4_3.verdict_from(wraps).status == "holds"


def test_c4_4_same_paradigm(verdicts):
    v = verdicts["C4.4"]
    above = v.evidence["cases"]["above_threshold"]
    assert above["norm_after"]["tf_style"] == pytest.approx(1.0, rel=1e-5)
    assert above["max_rel_diff_vs_tf"]["torch_style"] < 1e-5
    assert above["max_rel_diff_vs_tf"]["per_leaf"] > 0.1
    assert v.status == "fails"
    import copy

    differ = copy.deepcopy(v.evidence)
    differ["cases"]["above_threshold"]["max_rel_diff_vs_tf"]["torch_style"] = 0.2
    assert c4.c4_4.verdict_from(differ).status == "holds"
