"""Chapter 4 claims: measured evidence, with and without PyTorch."""

from pathlib import Path

import pytest

from jaxparadigm.claims import c4_clipping, c4_optim
from jaxparadigm.claims.torch_side import NOT_MEASURED
from tests.claims.conftest import require_torch, run_experiments

EXPERIMENTS = (c4_optim.c4_1, c4_optim.c4_2, c4_optim.c4_3, c4_clipping.c4_4)


@pytest.fixture(scope="module")
def verdicts():
    return run_experiments(EXPERIMENTS)


@pytest.fixture(scope="module")
def verdicts_without_torch():
    return run_experiments(EXPERIMENTS, no_torch=True)


def test_c4_1_sgd_step(verdicts):
    ev = verdicts["C4.1"].evidence
    assert ev["max_abs_error_vs_formula"] <= 1e-6
    assert ev["zero_grad_param_moved_with_weight_decay"] == pytest.approx(
        0.1 * 0.01 * 0.5, rel=1e-4
    )


def test_c4_2_fp16_nu_underflows(verdicts):
    v = verdicts["C4.2"]
    assert v.evidence["nu_float16"]["nu_underflow_fraction"] > 0.1
    assert v.evidence["nu_bfloat16"]["nu_underflow_fraction"] == 0.0
    assert v.evidence["nu_float16"]["nu_bytes"] * 2 == v.evidence["nu_float32"]["nu_bytes"]
    assert v.status == "fails"  # the harm is measured in JAX, with or without torch
    assert Path(v.figures["nu_underflow"]).is_file()


def test_c4_3_counter_overflow(verdicts):
    ev = verdicts["C4.3"].evidence
    assert min(ev["naive_int32_count"]) == -(2**31)
    assert min(ev["safe_int32_count"]) == 2**31 - 1 - 3
    assert min(ev["lr_linear_formula_on_naive_counter"]) < 0
    assert min(ev["tf_documented_polynomial_on_naive_counter"]) >= 0


def test_c4_4_non_finite_cases(verdicts):
    ev = verdicts["C4.4"].evidence
    above = ev["finite"]["above_threshold"]
    assert above["norm_after"]["tf_documented"] == pytest.approx(1.0, rel=1e-5)
    assert above["max_rel_diff_vs_tf"]["torch_formula_port"] < 1e-5
    assert above["max_rel_diff_vs_tf"]["per_leaf"] > 0.1
    nf = ev["nonfinite"]
    assert nf["zero"]["optax"] == nf["zero"]["tf_documented"] == "finite"
    assert nf["inf_entry"]["tf_documented"] == "all NaN"  # TF's documented NaN on an inf norm
    assert nf["inf_entry"]["optax"] == "1 of 384 NaN"  # optax zeroes the finite entries
    assert nf["data_parallel_nan_shard"]["optax"] == "all NaN"  # one NaN shard poisons the mean


@pytest.mark.crosscheck
def test_with_torch(verdicts):
    require_torch()
    assert verdicts["C4.1"].status == "conditional"
    assert verdicts["C4.1"].evidence["torch_unused_grad_is_none"] is True
    assert verdicts["C4.3"].status == "conditional"
    assert max(verdicts["C4.3"].evidence["torch_last_epoch"]) > 2**31 - 1
    nf = verdicts["C4.4"].evidence["nonfinite"]
    assert nf["nan_entry"]["torch_error_if_nonfinite"] == "raised"
    assert nf["inf_entry"]["torch"] == nf["inf_entry"]["optax"]
    assert verdicts["C4.4"].status == "conditional"


def test_without_torch_pytorch_is_not_modelled(verdicts_without_torch):
    vs = verdicts_without_torch
    for cid in ("C4.1", "C4.3", "C4.4"):
        assert vs[cid].status == "conditional", cid
        assert "PyTorch side not measured" in vs[cid].summary, cid
    assert vs["C4.2"].status == "fails"
    assert vs["C4.3"].evidence["torch_linear_lr"] == NOT_MEASURED
    assert "python_int" not in " ".join(vs["C4.3"].evidence)  # no formula standing in for torch
    assert "TF's documented" in vs["C4.3"].summary
    assert vs["C4.4"].evidence["finite"]["above_threshold"]["real_torch_max_rel_diff_vs_tf"] == (
        NOT_MEASURED
    )
