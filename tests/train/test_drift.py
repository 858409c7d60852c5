"""drift_report: PSI against a hand computation, KS against scipy, detection of a shifted feature."""

import numpy as np
import pytest

from jaxparadigm.train.data import DriftReport, drift_report
from jaxparadigm.train.drift import ks_statistic, psi


def test_shifted_feature_is_flagged_and_stable_ones_are_not():
    rng = np.random.default_rng(0)
    ref = rng.normal(size=(2000, 3))
    cur = rng.normal(size=(1500, 3))
    cur[:, 1] += 1.0  # one feature drifts by one standard deviation
    report = drift_report(ref, cur)
    assert isinstance(report, DriftReport)
    assert report.drifted == [1]
    assert report.psi.shape == report.ks.shape == (3,)
    assert report.psi[1] > 0.5 and max(report.psi[0], report.psi[2]) < 0.05
    assert report.ks[1] > 0.3 and max(report.ks[0], report.ks[2]) < 0.06
    text = str(report)
    assert "1 of 3 feature(s) drifted" in text and "DRIFT" in text
    assert len(text.splitlines()) == 2 + 3


def test_psi_matches_hand_computation():
    # Reference 0..9 -> two quantile bins split at 4.5: [0..4] and [5..9], each 50%.
    ref = np.arange(10.0)
    cur = np.array([0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0])  # 5/8 and 3/8
    want = (5 / 8 - 0.5) * np.log((5 / 8) / 0.5) + (3 / 8 - 0.5) * np.log((3 / 8) / 0.5)
    assert psi(ref, cur, bins=2) == pytest.approx(want, rel=1e-12)
    assert psi(ref, ref, bins=2) == 0.0


def test_ks_matches_scipy():
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=300), rng.normal(0.3, 1.2, size=200)
    assert ks_statistic(a, b) == pytest.approx(stats.ks_2samp(a, b).statistic, abs=1e-12)


def test_ks_closed_form_disjoint_samples():
    assert ks_statistic(np.zeros(5), np.ones(7)) == 1.0


@pytest.mark.parametrize(
    "ref, cur, kw, match",
    [
        (np.zeros(10), np.zeros((10, 1)), {}, r"reference: got shape \(10,\)"),
        (np.zeros((10, 2)), np.zeros((10, 3)), {}, "current: got 3 features, expected 2"),
        (np.zeros((10, 2)), np.full((10, 2), np.nan), {}, "current: expected finite"),
        (np.zeros((10, 2)), np.zeros((10, 2)), {"threshold": 0}, "threshold: got 0"),
        (np.zeros((10, 2)), np.zeros((10, 2)), {"bins": 1}, "bins: got 1"),
    ],
)
def test_bad_inputs(ref, cur, kw, match):
    with pytest.raises(ValueError, match=match):
        drift_report(ref, cur, **kw)
