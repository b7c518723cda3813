"""The vectorised calibration simulations (harness.stats.calibration) against the scalar tests and intervals the
verdicts use, simulation by simulation: the same draws, decided one row at a time by scipy and harness.stats."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as st

from harness.stats import calibration as calib
from harness.stats.effect import mcnemar_midp
from harness.stats.intervals import bca_from_replicates, t_interval

pytestmark = pytest.mark.unit


def _runs(seed=31, size=60):
    rng = np.random.default_rng(seed)
    b = rng.random(size)
    return np.clip(b + rng.normal(0.0, 0.15, size), 0, 1), b


def test_type1_rates_equal_row_by_row_decisions():
    a, b = _runs()
    sims, n, n_perm, n_boot, alpha = 60, 12, 300, 400, 0.1
    res = calib.type1_rates(a, b, n=n, sims=sims, alpha=alpha, n_perm=n_perm, n_boot=n_boot, seed=5)
    rng = np.random.default_rng(5)
    idx = np.argsort(rng.random((sims, len(a))), axis=1)[:, :n]
    swap = rng.random((sims, n)) < 0.5
    A, B = np.where(swap, b[idx], a[idx]), np.where(swap, a[idx], b[idx])
    D = A - B
    S = rng.choice([-1.0, 1.0], size=(n_perm, n))
    W = rng.multinomial(n, np.full(n, 1.0 / n), size=n_boot).astype(float)
    rows = {k: [] for k in res.rates}
    for i, d in enumerate(D):
        rows["t"].append(st.ttest_1samp(d, 0.0).pvalue < alpha)
        perm = (1 + np.sum(np.abs(S @ d) >= abs(d.sum()) - 1e-9)) / (n_perm + 1)
        rows["permutation"].append(perm < alpha)
        rows["wilcoxon"].append(st.wilcoxon(d[np.abs(d) > 1e-12]).pvalue < alpha)
        rows["mcnemar"].append(mcnemar_midp(A[i] >= 0.5, B[i] >= 0.5) < alpha)
        lo, hi = t_interval(d, confidence=1 - alpha)
        rows["bootstrap-t"].append(lo > 0 or hi < 0)
        reps = W @ d / n
        rows["bootstrap-percentile"].append(np.quantile(reps, alpha / 2) > 0 or np.quantile(reps, 1 - alpha / 2) < 0)
        lo, hi = bca_from_replicates(d.mean(), reps, (d.sum() - d) / (n - 1), confidence=1 - alpha)
        rows["bootstrap-bca"].append(lo > 0 or hi < 0)
    assert (res.n, res.sims, res.alpha) == (n, sims, alpha)
    assert res.rates == pytest.approx({k: float(np.mean(v)) for k, v in rows.items()}, abs=1e-12)
    assert 0 < res.rates["t"] < 1  # the row decisions are not all alike, so every branch is exercised


@pytest.mark.parametrize("relative", [False, True])
def test_coverage_equals_row_by_row_intervals(relative):
    a, b = _runs(seed=32)
    sims, n, n_boot, conf = 50, 15, 400, 0.8
    res = calib.coverage(a, b, n=n, relative=relative, sims=sims, confidence=conf, n_boot=n_boot, seed=9)
    rng = np.random.default_rng(9)
    idx = rng.integers(0, len(a), size=(sims, n))
    A, B = a[idx], b[idx]
    W = rng.multinomial(n, np.full(n, 1.0 / n), size=n_boot).astype(float)
    truth = a.mean() / b.mean() - 1 if relative else a.mean() - b.mean()
    hits = {"t": [], "percentile": [], "bca": []}
    widths = {"t": [], "percentile": [], "bca": []}
    for x, y in zip(A, B):
        if relative:
            est = x.mean() / y.mean() - 1
            psi = (x - (1 + est) * y) / y.mean()
            lo, hi = t_interval(psi, confidence=conf)
            t = (est + lo, est + hi)
            reps = (W @ x) / (W @ y) - 1
            jack = (x.sum() - x) / (y.sum() - y) - 1
        else:
            d = x - y
            est, t = d.mean(), t_interval(d, confidence=conf)
            reps, jack = W @ d / n, (d.sum() - d) / (n - 1)
        q = (1 - conf) / 2
        bounds = {"t": t, "percentile": (np.quantile(reps, q), np.quantile(reps, 1 - q)),
                  "bca": bca_from_replicates(est, reps, jack, confidence=conf)}
        for k, (lo, hi) in bounds.items():
            hits[k].append(lo <= truth <= hi)
            widths[k].append(hi - lo)
    assert (res.n, res.sims, res.confidence) == (n, sims, conf) and res.truth == pytest.approx(truth)
    assert res.coverage == pytest.approx({k: float(np.mean(v)) for k, v in hits.items()}, abs=1e-12)
    assert res.mean_width == pytest.approx({k: float(np.mean(v)) for k, v in widths.items()}, rel=1e-9)
