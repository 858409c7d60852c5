"""Chapter 5 claims: evidence values and the rules that map them to a status."""

import pytest

from jaxparadigm.claims import c5_engineering as c5


def test_c5_1_engineering_checks():
    v = c5.c5_1.run()
    ev = v.evidence
    assert ev["validation_good_batch_error"] == ""
    assert "'x'" in ev["validation_nan_error"] and "'y'" in ev["validation_range_error"]
    assert ev["drift_flagged"] == [1]
    assert "rollback" in ev["guard_events"]
    assert "signature" in ev["signature_mismatch_error"]
    assert v.status == "holds"
    assert c5.c5_1.verdict_from(dict(ev, drift_flagged=[0, 1])).status == "fails"
    assert c5.c5_1.verdict_from(dict(ev, signature_mismatch_error="")).status == "fails"


EVIDENCE_C5_2 = {
    "requests": 140,
    "p50_ms": 20.0,
    "p99_ms": 40.0,
    "single_query_qps": 45.0,
    "batched_qps_64": 300.0,
    "trace_completeness": 1.0,
    "article_thresholds": {"p99_ms": 350.0, "qps": 12000.0, "trace": 0.9997},
}


def test_c5_2_rule():
    assert c5.c5_2.verdict_from(EVIDENCE_C5_2).status == "conditional"
    fast = dict(EVIDENCE_C5_2, batched_qps_64=20000.0)
    assert c5.c5_2.verdict_from(fast).status == "holds"


@pytest.mark.slow
def test_c5_2_measured():
    v = c5.c5_2.run()
    assert v.evidence["requests"] == 2 * len(c5.PYDOC_QUERIES)
    assert 0 < v.evidence["p50_ms"] <= v.evidence["p99_ms"]
    assert v.evidence["trace_completeness"] == 1.0
