"""Chapter 5 claims: the engineering checks (C5.1) and the traced service (C5.2)."""

import pytest

from jaxparadigm.claims import c5_engineering as c5
from jaxparadigm.claims import c5_service
from jaxparadigm.config import ClaimsConfig, ServiceReadinessConfig


def test_c5_1_engineering_checks():
    v = c5.c5_1.run()
    ev = v.evidence
    assert ev["validation_good_batch_error"] == ""
    assert "'x'" in ev["validation_nan_error"] and "'y'" in ev["validation_range_error"]
    assert ev["drift_flagged"] == [1]
    assert "rollback" in ev["guard_events"]
    assert "signature" in ev["signature_mismatch_error"]
    assert v.status == "holds"
    assert "HMAC" not in v.summary and ev["signature_kind"] in v.summary


@pytest.mark.slow
def test_c5_2_measured_from_spans():
    cfg = ClaimsConfig(c5_2=ServiceReadinessConfig(requests=60, timeout_s=1.0))
    v = c5_service.c5_2.run(cfg)
    ev = v.evidence
    assert ev["requests_sent"] == 60
    assert ev["requests_by_kind"] == {"ok": 56, "malformed": 3, "timeout": 1}
    assert ev["outcomes_by_kind"]["malformed"] == {"400": 3}
    assert ev["outcomes_by_kind"]["timeout"] == {"timeout": 1}
    assert ev["trace_completeness"] == 1.0 and ev["complete_traces"] == 60
    assert 0 < ev["p50_ms"] <= ev["p99_ms"]
    assert ev["spans_exported"] == 60 * 2 + 56 * 4 + 3 + 1 * 5
    strict = ClaimsConfig(c5_2=ServiceReadinessConfig(requests=20, p99_ms=0.001))
    assert c5_service.c5_2.run(strict).status == "fails"
