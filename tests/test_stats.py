"""Statistics against scipy/statsmodels and hand-computed values, on seeded random cases."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as st

from harness.stats import (
    bootstrap_ci, cohens_dz, holm, kendall_tau, mcnemar, minimum_detectable_effect, paired_difference,
    permutation_test, relative_improvement, relative_improvement_ci, wilcoxon,
)
from harness.stats.latency import interleaved_ratio, ratio_of

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("seed", range(5))
def test_wilcoxon_matches_scipy(seed):
    rng = np.random.default_rng(seed)
    a, b = rng.random(40), rng.random(40)
    assert abs(wilcoxon(a, b) - st.wilcoxon(a, b).pvalue) < 1e-9


@pytest.mark.parametrize("seed", range(5))
def test_mcnemar_matches_statsmodels_and_binomial(seed):
    from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar

    rng = np.random.default_rng(seed)
    a, b = rng.random(60) < 0.6, rng.random(60) < 0.5
    res = mcnemar(a, b, exact_below=10_000)
    n10, n01 = int(np.sum(a & ~b)), int(np.sum(~a & b))
    assert (res.c, res.b) == (n10, n01)
    expected = min(1.0, 2 * st.binom.cdf(min(n10, n01), n10 + n01, 0.5))
    assert abs(res.p_value - expected) < 1e-9
    table = [[np.sum(a & b), n01], [n10, np.sum(~a & ~b)]]
    assert abs(res.p_value - sm_mcnemar(table, exact=True).pvalue) < 1e-9
    chi = mcnemar(a, b, exact_below=0)
    stat = (abs(n10 - n01) - 1) ** 2 / (n10 + n01)
    assert abs(chi.statistic - stat) < 1e-9 and abs(chi.p_value - st.chi2.sf(stat, 1)) < 1e-9


def test_holm_by_hand():
    reject, adj = holm([0.01, 0.04, 0.03, 0.5], alpha=0.05)
    # sorted: 0.01*4=0.04, 0.03*3=0.09, 0.04*2=0.08 -> max-accumulated 0.09, 0.5*1 -> 0.5
    assert adj == pytest.approx([0.04, 0.09, 0.09, 0.5], abs=1e-12)
    assert reject == [True, False, False, False]


@pytest.mark.parametrize("seed", range(3))
def test_effect_size_and_mde(seed):
    rng = np.random.default_rng(seed)
    a, b = rng.normal(1, 1, 30), rng.normal(0.5, 1, 30)
    d = a - b
    assert abs(cohens_dz(a, b) - d.mean() / d.std(ddof=1)) < 1e-12
    mde = minimum_detectable_effect(1.0, 100)  # the verdicts' MDE: t quantiles, n - 1 degrees of freedom
    assert abs(mde - (st.t.ppf(0.975, 99) + st.t.ppf(0.8, 99)) / 10) < 1e-12


def test_bootstrap_and_permutation_behave():
    rng = np.random.default_rng(0)
    x = rng.normal(0.3, 1, 200)
    lo, hi = bootstrap_ci(x, seed=1)
    assert lo < x.mean() < hi
    assert abs((hi - lo) - 2 * 1.96 * x.std(ddof=1) / np.sqrt(200)) < 0.05
    assert permutation_test(x + 1, np.zeros(200), seed=2) < 0.001
    assert permutation_test(np.zeros(5), np.zeros(5)) == 1.0
    diff = paired_difference([1, 1, 0, 1], [0, 1, 0, 0], seed=3)
    assert diff.mean == 0.5 and diff.n == 4


def test_relative_improvement():
    assert relative_improvement([0.6, 0.6], [0.5, 0.5]) == pytest.approx(0.2)
    assert relative_improvement([0, 0], [0, 0]) == 0.0
    lo, hi = relative_improvement_ci(np.full(20, 0.6), np.full(20, 0.5), seed=0)
    assert lo == pytest.approx(0.2) and hi == pytest.approx(0.2)
    with pytest.raises(ValueError):
        relative_improvement([1, 2], [1])


def test_kendall_matches_scipy():
    rng = np.random.default_rng(4)
    x, y = rng.random(30), rng.random(30)
    assert abs(kendall_tau(x, y) - st.kendalltau(x, y).statistic) < 1e-12


def test_interleaved_ratio_with_fake_clock():
    ticks = iter(np.cumsum([0, 1, 0, 3, 0, 3, 0, 1, 0, 1, 0, 3]).tolist())
    r = interleaved_ratio(lambda x: None, lambda x: None, [1, 2, 3], warmup=0, clock=lambda: next(ticks))
    assert r.median == 3.0 and r.rounds == 3
    assert ratio_of([1, 2], [2, 2]).median == pytest.approx(1.5)


def test_kendall_undefined_is_nan_not_zero():
    assert np.isnan(kendall_tau([1, 2, 3], [1, 1, 1])) and np.isnan(kendall_tau([2, 2], [0, 1]))
    assert kendall_tau([3, 2, 1], [1, 0, 0]) == pytest.approx(st.kendalltau([3, 2, 1], [1, 0, 0]).statistic)
