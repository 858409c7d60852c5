"""Feature drift between a reference sample and a current one (C5.1: "detect drift").

Per feature ``j`` of two ``[n, features]`` arrays:

* PSI (population stability index) over ``bins`` quantile bins of the reference:
  ``psi_j = sum_b (c_b - r_b) * ln(c_b / r_b)``, with ``r_b``, ``c_b`` the bin fractions (floored at
  ``1e-6`` so empty bins stay finite). Rule of thumb: < 0.1 stable, 0.1-0.2 moderate, > 0.2 drift.
* KS (two-sample Kolmogorov-Smirnov statistic): ``ks_j = max_x |F_ref(x) - F_cur(x)|``.

A feature is ``drifted`` when ``psi_j > threshold``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike

from jaxparadigm.common.numbers import check_float, check_int

__all__ = ["DriftReport", "drift_report", "psi", "ks_statistic"]

_FLOOR = 1e-6


class DriftReport(NamedTuple):
    """Per-feature ``psi``, ``ks`` (float64 ``[features]``) and the ``drifted`` indices (C5.1)."""

    psi: np.ndarray
    ks: np.ndarray
    drifted: list
    threshold: float

    def __str__(self) -> str:
        lines = [
            f"drift report (PSI threshold {self.threshold:g}; {len(self.drifted)} of "
            f"{len(self.psi)} feature(s) drifted)",
            f"{'feature':>7}  {'PSI':>8}  {'KS':>6}  status",
        ]
        for j, (p, k) in enumerate(zip(self.psi, self.ks, strict=True)):
            status = "DRIFT" if j in self.drifted else "ok"
            lines.append(f"{j:>7}  {p:>8.4f}  {k:>6.3f}  {status}")
        return "\n".join(lines)


def psi(reference: np.ndarray, current: np.ndarray, bins: int = 10) -> float:
    """PSI of one feature: ``sum_b (c_b - r_b) ln(c_b / r_b)`` over the reference's quantile
    bins (C5.1)."""
    reference = np.asarray(reference, dtype=np.float64)
    current = np.asarray(current, dtype=np.float64)
    edges = np.unique(np.quantile(reference, np.linspace(0.0, 1.0, bins + 1)))
    inner = edges[1:-1]  # outer bins are open so current values outside the reference range count
    r = np.bincount(np.searchsorted(inner, reference, side="right"), minlength=len(inner) + 1)
    c = np.bincount(np.searchsorted(inner, current, side="right"), minlength=len(inner) + 1)
    r = np.maximum(r / r.sum(), _FLOOR)
    c = np.maximum(c / c.sum(), _FLOOR)
    return float(np.sum((c - r) * np.log(c / r)))


def ks_statistic(reference: np.ndarray, current: np.ndarray) -> float:
    """Two-sample KS statistic ``max_x |F_ref(x) - F_cur(x)|`` over all sample points (C5.1)."""
    a = np.sort(np.asarray(reference, dtype=np.float64))
    b = np.sort(np.asarray(current, dtype=np.float64))
    points = np.concatenate([a, b])
    fa = np.searchsorted(a, points, side="right") / a.size
    fb = np.searchsorted(b, points, side="right") / b.size
    return float(np.max(np.abs(fa - fb)))


def _as_2d(name: str, x) -> np.ndarray:
    arr = np.asarray(x)
    if arr.ndim != 2 or arr.shape[0] < 2 or arr.shape[1] < 1:
        raise ValueError(f"{name}: got shape {arr.shape}, expected [n >= 2, features >= 1]")
    if not np.issubdtype(arr.dtype, np.number) or not np.all(np.isfinite(arr)):
        raise ValueError(f"{name}: expected finite numeric values (dtype {arr.dtype})")
    return arr


def drift_report(
    reference: ArrayLike, current: ArrayLike, threshold: float = 0.2, bins: int = 10
) -> DriftReport:
    """PSI and KS per feature of ``[n, features]`` arrays; ``drifted`` where ``psi > threshold``.

    Serves C5.1. ``reference`` and ``current`` may have different ``n`` but the same ``features``.
    """
    ref = _as_2d("reference", reference)
    cur = _as_2d("current", current)
    if ref.shape[1] != cur.shape[1]:
        raise ValueError(
            f"current: got {cur.shape[1]} features, expected {ref.shape[1]} (as reference)"
        )
    threshold = check_float("threshold", threshold, 0, lo_open=True, error=ValueError)
    bins = check_int("bins", bins, 2, error=ValueError)
    psis = np.array([psi(ref[:, j], cur[:, j], bins) for j in range(ref.shape[1])])
    kss = np.array([ks_statistic(ref[:, j], cur[:, j]) for j in range(ref.shape[1])])
    drifted = [int(j) for j in np.flatnonzero(psis > threshold)]
    return DriftReport(psi=psis, ks=kss, drifted=drifted, threshold=float(threshold))
