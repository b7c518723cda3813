"""The vectorised calibration simulations (harness.stats.calibration) against the scalar tests and intervals the
verdicts use, simulation by simulation: the same draws, decided one row at a time by scipy and harness.stats."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as st

from harness.stats import calibration as calib
from harness.stats._effect import mcnemar_midp
from harness.stats.intervals import bca_from_replicates, t_interval

pytestmark = pytest.mark.unit


def _runs(seed=31, size=60):
    rng = np.random.default_rng(seed)
    b = rng.random(size)
    return np.clip(b + rng.normal(0.0, 0.15, size), 0, 1), b


def test_type1_rates_equal_row_by_row_decisions():
    a, b = _runs()
    sims, n, n_perm, n_boot, alpha = 60, 12, 300, 400, 0.1
    res = calib.type1_rates(a, b, n=n, sims=sims, alpha=alpha, n_perm=n_perm, n_boot=n_boot, seed=5, null="swap")
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


# ---------------------------------------------------------------- the copula null (Urbano et al.)
def test_copula_null_pairs_equal_a_hand_built_draw():
    a, b = _runs(seed=33, size=40)
    A, B = calib.copula_null_pairs(a, b, n=7, sims=5, rng=np.random.default_rng(3))
    rng = np.random.default_rng(3)
    za = st.norm.ppf(st.rankdata(a) / 41)
    zb = st.norm.ppf(st.rankdata(b) / 41)
    rho = np.corrcoef(za, zb)[0, 1]
    z1 = rng.standard_normal((5, 7))
    z2 = rho * z1 + np.sqrt(1 - rho**2) * rng.standard_normal((5, 7))
    grid, margin = np.arange(40), np.sort(a)
    assert A == pytest.approx(np.interp(st.norm.cdf(z1) * 39, grid, margin), abs=1e-12)
    assert B == pytest.approx(np.interp(st.norm.cdf(z2) * 39, grid, margin), abs=1e-12)


def test_copula_null_has_equal_systems_and_the_real_dependence():
    rng = np.random.default_rng(4)
    b = rng.beta(1, 2, 225)
    a = np.clip(b + 0.2 + rng.normal(0, 0.1, 225), 0, 1)  # a far better run, strongly tied to b
    A, B = calib.copula_null_pairs(a, b, n=225, sims=400, rng=np.random.default_rng(5))
    assert abs((A - B).mean()) < 0.005  # equally effective: the null holds although a beats b by 0.2
    assert np.quantile(B, [0.1, 0.5, 0.9]) == pytest.approx(np.quantile(a, [0.1, 0.5, 0.9]), abs=0.02)
    real = st.spearmanr(a, b).statistic
    sim = np.mean([st.spearmanr(x, y).statistic for x, y in zip(A[:100], B[:100])])
    assert sim == pytest.approx(real, abs=0.05)


def test_type1_rates_under_the_copula_null_hold_the_level_and_a_shift_breaks_it():
    rng = np.random.default_rng(6)
    b = rng.beta(1, 2, 225)
    a = np.clip(b + rng.normal(0, 0.15, 225), 0, 1)
    res = calib.type1_rates(a, b, n=30, sims=1500, n_perm=400, n_boot=400, seed=7)
    assert 0.03 <= res.rates["t"] <= 0.07 and 0.03 <= res.rates["permutation"] <= 0.07
    # the same simulation with run b's margin for the second system: a real difference, so the tests reject
    A, B = calib.copula_null_pairs(a, b, n=30, sims=300, rng=np.random.default_rng(8))
    shifted = B - 0.1
    assert np.mean(calib._t_pvalues(A - shifted) < 0.05) > 0.5
