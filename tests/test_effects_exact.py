"""Every field of an Effect, every interval path and the power prediction against independent computations
(scipy, statsmodels, formulas by hand). Written against the mutants `scripts/mutation.sh` found surviving."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as st

from harness.stats import calibration as calib
from harness.stats._effect import Effect, paired_effect, proportion_effect
from harness.stats.intervals import wilson_interval
from harness.stats._paired import cohens_dz, relative_improvement_ci
from harness.stats._verdict import Decision, decide, minimum_detectable_effect

pytestmark = pytest.mark.unit


def _pair(seed: int, n: int = 40):
    rng = np.random.default_rng(seed)
    b = rng.random(n) * 0.6
    a = np.clip(b + rng.normal(0.05, 0.1, n), 0, 1)
    a[:3] = b[:3]  # three exact ties
    return a, b


def test_difference_effect_every_field():
    a, b = _pair(1)
    d = a - b
    e = paired_effect(a, b, seed=3)
    n = len(d)
    sem = d.std(ddof=1) / math.sqrt(n)
    lo, hi = st.t.interval(0.95, n - 1, loc=d.mean(), scale=sem)
    assert (e.kind, e.n, e.interval_method, e.primary_test, e.confidence) == ("difference", n, "t", "t", 0.95)
    assert e.estimate == pytest.approx(d.mean()) and e.sd == pytest.approx(d.std(ddof=1))
    assert e.ci == pytest.approx((lo, hi))
    assert e.p_values["t"] == pytest.approx(st.ttest_rel(a, b).pvalue)
    assert e.p_values["wilcoxon"] == pytest.approx(st.wilcoxon(d[d != 0], zero_method="wilcox").pvalue)
    assert "mcnemar" not in e.p_values and e.p_value == e.p_values["t"]
    assert (e.improved, e.unchanged, e.degraded) == (int((d > 0).sum()), 3, int((d < 0).sum()))
    assert e.baseline_mean == pytest.approx(b.mean()) and e.candidate_mean == pytest.approx(a.mean())
    assert e.attainable == pytest.approx((-b.mean(), 1 - b.mean()))
    assert paired_effect(a, b, bounds=None).attainable is None
    assert paired_effect(a, b, bounds=(0, 10)).attainable == pytest.approx((-b.mean(), 10 - b.mean()))


def test_an_effect_without_tests_is_the_same_effect_without_p_values():
    """`tests=False` (a caller deciding on the interval alone) leaves the p-values out and changes nothing else."""
    from dataclasses import replace

    from harness.stats._effect import anytime_intervals

    a, b = _pair(2)
    for kw in ({}, {"relative": True}, {"binary": True}, {"relative": True, "interval": "betting"},
               {"interval": "betting", "confidence": 0.99}):
        with_tests, without = paired_effect(a, b, **kw), paired_effect(a, b, tests=False, **kw)
        assert with_tests.p_values and without.p_values == {} and without.p_value is None
        assert without == replace(with_tests, p_values={}), kw
        assert decide(without, ">=", 0.02, Decision("ci")) == decide(with_tests, ">=", 0.02, Decision("ci"))
    with anytime_intervals():
        assert paired_effect(a, b, tests=False) == replace(paired_effect(a, b), p_values={})


def test_permutation_p_close_to_the_exact_sign_flip_distribution():
    rng = np.random.default_rng(5)
    d = rng.normal(0.3, 1.0, 12)
    signs = np.array(np.meshgrid(*[[-1, 1]] * 12)).reshape(12, -1).T
    exact = float(np.mean(np.abs((signs * d).mean(axis=1)) >= abs(d.mean()) - 1e-12))
    e = paired_effect(d, np.zeros(12), bounds=None, n_resamples=20_000, seed=2)
    assert e.p_values["permutation"] == pytest.approx(exact, abs=0.015)


def test_binary_effect_adds_mcnemar_as_primary():
    a = np.array([1, 1, 1, 0, 1, 1, 0, 1, 1, 1], float)
    b = np.array([0, 1, 0, 0, 1, 0, 0, 1, 1, 0], float)
    e = paired_effect(a, b, binary=True)
    # discordant 4 (a only) vs 0 (b only): mid-p = 2 * (P(X < 0) + P(X = 0) / 2) with X ~ Bin(4, .5) = 0.0625
    assert e.primary_test == "mcnemar" and e.p_value == pytest.approx(0.0625)


def test_relative_effect_t_interval_is_fiellers_and_delta_is_kept():
    a, b = _pair(2)
    e = paired_effect(a, b, relative=True)
    est = a.mean() / b.mean() - 1
    psi = (a - (1 + est) * b) / b.mean()
    n, q = len(a), st.t.ppf(0.975, len(a) - 1)
    assert e.kind == "relative" and e.estimate == pytest.approx(est) and e.sd == pytest.approx(psi.std(ddof=1))
    # Fieller by hand: the ρ where the t statistic of mean(a − ρ·b) is exactly ±q (the interval's two ends)
    for rho in (e.ci[0] + 1, e.ci[1] + 1):
        lin = a - rho * b
        assert abs(lin.mean()) / (lin.std(ddof=1) / math.sqrt(n)) == pytest.approx(q, rel=1e-9)
    assert e.ci[0] < est < e.ci[1] and e.interval_method == "t"
    assert e.attainable == pytest.approx((-1.0, 1 / b.mean() - 1))
    half = q * psi.std(ddof=1) / math.sqrt(n)
    assert paired_effect(a, b, relative=True, interval="delta").ci == pytest.approx((est - half, est + half))


@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_relative_effect_bootstrap_intervals_agree_with_the_delta_method(method):
    a, b = _pair(3, n=200)
    delta = paired_effect(a, b, relative=True).ci
    boot = paired_effect(a, b, relative=True, interval=method, n_resamples=4000, seed=1)
    assert boot.interval_method == method and boot.ci[0] < boot.estimate < boot.ci[1]
    assert boot.ci == pytest.approx(delta, abs=0.02)
    narrow = paired_effect(a, b, relative=True, interval=method, n_resamples=4000, seed=1, confidence=0.5)
    assert boot.ci[0] < narrow.ci[0] < narrow.ci[1] < boot.ci[1]


@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_difference_bootstrap_intervals_agree_with_t(method):
    a, b = _pair(4, n=200)
    e = paired_effect(a, b, interval=method, n_resamples=4000, seed=1)
    assert e.ci == pytest.approx(paired_effect(a, b).ci, abs=0.006)


def test_relative_bca_with_one_query_is_unbounded_and_unknown_methods_raise():
    assert paired_effect([0.5], [0.25], relative=True, interval="bca", n_resamples=50).ci == (-math.inf, math.inf)
    for relative in (False, True):
        with pytest.raises(ValueError, match="unknown interval method"):
            paired_effect([0.5, 0.2], [0.25, 0.1], relative=relative, interval="normal")


def test_relative_bootstrap_with_a_zero_baseline_resample_keeps_the_others():
    a, b = np.array([0.5, 0.6, 0.7]), np.array([0.0, 0.0, 0.3])
    e = paired_effect(a, b, relative=True, interval="percentile", n_resamples=2000, seed=0)
    assert math.isfinite(e.ci[0]) and math.isfinite(e.ci[1]) and e.ci[0] <= e.estimate <= e.ci[1]


def test_empty_and_mismatched_effects():
    e = paired_effect([], [])
    assert e.n == 0 and math.isnan(e.estimate) and e.p_values == {} and e.attainable is None
    assert math.isnan(paired_effect([], [], relative=True).estimate)
    assert math.isnan(paired_effect([0.0, 0.0], [0.0, 0.0], relative=True).estimate)
    with pytest.raises(ValueError, match="same length"):
        paired_effect([1, 2], [1])
    with pytest.raises(ValueError, match="1-D"):
        paired_effect([[1, 2]], [[1, 2]])


def test_proportion_effect_every_field():
    e = proportion_effect([True] * 7 + [False] * 13)
    assert (e.kind, e.n, e.interval_method, e.attainable) == ("proportion", 20, "wilson", (0.0, 1.0))
    assert e.estimate == pytest.approx(0.35) and e.sd == pytest.approx(math.sqrt(0.35 * 0.65))
    assert e.ci == pytest.approx(wilson_interval(7, 20))
    assert proportion_effect([True] * 7 + [False] * 13, confidence=0.8).ci == pytest.approx(
        wilson_interval(7, 20, confidence=0.8))
    empty = proportion_effect([])
    assert empty.n == 0 and math.isnan(empty.estimate) and math.isnan(empty.sd)


def test_wilson_matches_statsmodels_at_several_levels():
    from statsmodels.stats.proportion import proportion_confint

    for k, n, c in ((0, 10, 0.95), (10, 10, 0.9), (3, 17, 0.99), (50, 120, 0.8)):
        assert wilson_interval(k, n, confidence=c) == pytest.approx(
            proportion_confint(k, n, alpha=1 - c, method="wilson"), abs=1e-12)


def test_as_context_is_json_ready():
    e = paired_effect([0.5, 0.7, 0.9], [0.4, 0.4, 0.5], binary=False)
    ctx = e.as_context()
    assert ctx["ci"] == list(e.ci) and ctx["attainable"] == list(e.attainable) and ctx["p_value"] == e.p_value
    assert ctx["estimate"] == e.estimate and ctx["n"] == 3
    bare = Effect("difference", 0.1, (0.0, 0.2), 5, 0.1)
    assert bare.p_value is None and bare.as_context()["attainable"] is None


def test_queries_for_power_is_the_smallest_n_whose_mde_reaches_the_effect():
    for sd, effect in ((0.2, 0.05), (0.3, 0.1), (0.1, 0.1), (0.25, 0.02)):
        n = calib.queries_for_power(sd, effect)
        assert minimum_detectable_effect(sd, n) <= effect
        assert n == 2 or minimum_detectable_effect(sd, n - 1) > effect
    assert calib.queries_for_power(0.2, 0.05, power=0.9) > calib.queries_for_power(0.2, 0.05)
    assert calib.queries_for_power(0.2, 0.05, confidence=0.99) > calib.queries_for_power(0.2, 0.05)
    assert calib.queries_for_power(0.01, 5.0) == 2
    for bad in ((0.0, 0.1), (0.2, 0.0), (-1, 0.1), (0.2, -0.1)):
        with pytest.raises(ValueError):
            calib.queries_for_power(*bad)


def test_power_at_prediction_is_near_the_predicted_power():
    rng = np.random.default_rng(9)
    a, b = rng.random(120), rng.random(120)
    r = calib.power_at_prediction(a, b, 0.1, sims=1500, seed=1)
    base = np.concatenate([a - b, b - a])
    assert r.sd == pytest.approx(math.sqrt(np.mean(base**2) + 0.1**2 * 0.5 / 0.5))
    assert r.predicted_n == calib.queries_for_power(r.sd, 0.1) and r.predicted_power == 0.8
    assert (r.effect, r.share, r.sims) == (0.1, 0.5, 1500)
    assert abs(r.measured_power - 0.8) < 0.05


def test_relative_improvement_ci_brackets_and_matches_the_delta_method():
    a, b = _pair(6, n=300)
    lo, hi = relative_improvement_ci(a, b, seed=1)
    d = paired_effect(a, b, relative=True).ci
    assert lo < a.mean() / b.mean() - 1 < hi and (lo, hi) == pytest.approx(d, abs=0.02)


def test_cohens_dz_by_hand():
    a, b = np.array([0.5, 0.9, 0.4, 0.8]), np.array([0.4, 0.5, 0.4, 0.5])
    d = a - b
    assert cohens_dz(a, b) == pytest.approx(d.mean() / d.std(ddof=1))
    assert cohens_dz([0.5, 0.5], [0.5, 0.5]) == 0.0


@pytest.mark.parametrize("comparator,threshold,expected", [
    (">=", 0.05, "supported"), (">", 0.05, "supported"), ("<=", 0.05, "refuted"), ("<", 0.05, "refuted"),
    (">=", 0.25, "refuted"), ("<=", 0.25, "supported"), (">=", 0.12, "inconclusive"), ("<", 0.12, "inconclusive"),
])
def test_ci_rule_all_comparators(comparator, threshold, expected):
    e = Effect("difference", 0.12, (0.08, 0.16), 50, 0.1)
    v = decide(e, comparator, threshold, Decision("ci"))
    assert v.verdict == expected
    assert (v.queries_needed is None) == (expected != "inconclusive")
    assert v.mde == pytest.approx(minimum_detectable_effect(0.1, 50))


def test_ci_rule_boundaries_are_inclusive_exactly_as_the_comparator_says():
    on_edge = Effect("difference", 0.1, (0.05, 0.15), 50, 0.1)
    assert decide(on_edge, ">=", 0.05, Decision("ci")).verdict == "supported"
    assert decide(on_edge, ">", 0.05, Decision("ci")).verdict == "inconclusive"
    assert decide(on_edge, "<=", 0.15, Decision("ci")).verdict == "supported"
    assert decide(on_edge, "<", 0.15, Decision("ci")).verdict == "inconclusive"
    assert decide(on_edge, ">", 0.15, Decision("ci")).verdict == "refuted"


def test_test_rule_reasons_and_missing_p():
    e = Effect("difference", 0.06, (-0.01, 0.13), 40, 0.2, p_values={"mcnemar": 0.1})
    d = Decision("test", "mcnemar", 0.15)
    v = decide(e, ">=", 0.04, d)
    assert v.verdict == "supported" and "p = 0.1 < 0.15" in v.reason
    v = decide(e, ">=", 0.04, d, p_value=0.2)
    assert v.verdict == "inconclusive" and "≥ 0.15" in v.reason
    v = decide(e, ">=", 0.08, d)
    assert v.verdict == "inconclusive" and "not >= 0.08" in v.reason
    assert decide(Effect("difference", 0.06, (-0.01, 0.13), 40, 0.2), ">=", 0.04, d).reason == "no mcnemar p-value"
    assert decide(e, ">=", 0.04, d, p_value=float("nan")).verdict == "inconclusive"
    with pytest.raises(ValueError, match="three-valued"):
        decide(e, ">=", 0.04, Decision("estimate"))


def test_undefined_interval_and_infinite_estimate_are_inconclusive():
    v = decide(Effect("difference", 0.1, (float("nan"), float("nan")), 5, 0.1), ">=", 0.0, Decision("ci"))
    assert v.verdict == "inconclusive" and v.reason == "interval undefined"
    v = decide(Effect("relative", float("inf"), (float("nan"),) * 2, 5, float("nan")), ">=", 0.1, Decision("ci"))
    assert v.verdict == "inconclusive" and "inf" in v.reason


def test_headroom_on_the_lower_side():
    e = Effect("difference", -0.01, (-0.03, 0.01), 40, 0.05, attainable=(-0.02, 0.9))
    v = decide(e, "<=", -0.05, Decision("ci"))
    assert v.verdict == "inconclusive" and v.untestable and "at most -0.02" in v.reason


def test_paired_t_pvalue_degenerate_branches():
    from harness.stats._effect import paired_t_pvalue

    assert math.isnan(paired_t_pvalue(np.array([]))) and math.isnan(paired_t_pvalue(np.array([0.2])))
    assert paired_t_pvalue(np.array([0.0])) == 1.0
    assert paired_t_pvalue(np.array([0.0, 0.0])) == 1.0 and paired_t_pvalue(np.array([0.2, 0.2, 0.2])) == 0.0
    assert paired_t_pvalue(np.array([0.1, 0.3])) == pytest.approx(st.ttest_1samp([0.1, 0.3], 0).pvalue)
    assert paired_t_pvalue(np.array([0.0, 0.2, 0.2])) == pytest.approx(st.ttest_1samp([0, 0.2, 0.2], 0).pvalue)


def test_mcnemar_midp_reads_truthiness():
    from harness.stats._effect import mcnemar_midp

    assert mcnemar_midp([1, 0], [1, 0]) == 1.0  # no discordant pair
    assert mcnemar_midp([2, 0, 3], [0, 0, 5]) == pytest.approx(mcnemar_midp([1, 0, 1], [0, 0, 1]))  # 2 reads True
    assert mcnemar_midp([1, 0], [0, 1]) == pytest.approx(1.0)  # 2·P(X<=1) - P(X=1) = 1.5 - 0.5 for Bin(2, .5)
    assert mcnemar_midp([1], [0]) == pytest.approx(0.5)  # Bin(1, .5): 2·0.5 - 0.5


def test_paired_effect_permutation_uses_its_seed_and_resamples():
    a, b = _pair(7, n=15)
    p1 = paired_effect(a, b, seed=1, n_resamples=500).p_values["permutation"]
    assert p1 == paired_effect(a, b, seed=1, n_resamples=500).p_values["permutation"]
    assert p1 != paired_effect(a, b, seed=2, n_resamples=500).p_values["permutation"] or \
        p1 != paired_effect(a, b, seed=1, n_resamples=700).p_values["permutation"]


def test_wilcoxon_drops_near_zero_differences_only():
    tiny = np.array([1e-13, 0.2, 0.3, -0.1, 0.25, 0.4])
    e = paired_effect(tiny, np.zeros(6), bounds=None)
    assert e.p_values["wilcoxon"] == pytest.approx(st.wilcoxon(tiny[1:]).pvalue)
    assert paired_effect(np.zeros(4), np.zeros(4)).p_values["wilcoxon"] == 1.0


def test_paired_helpers_edge_cases():
    from harness.retrieval.rank_fusion import rrf_scores
    from harness.stats._paired import relative_improvement, wilcoxon

    assert rrf_scores([["a", "b"]], k=0) == {"a": 1.0, "b": 0.5}
    with pytest.raises(ValueError, match="k must be non-negative"):
        rrf_scores([["a"]], k=-1)
    assert relative_improvement([0.5, 0.1], [0.0, 0.0]) == math.inf
    assert relative_improvement([0.0], [0.0]) == 0.0
    assert wilcoxon([0.3, 0.3], [0.3, 0.3]) == 1.0


def test_verdict_objects_in_full():
    from harness.stats._verdict import Verdict

    assert decide(Effect("difference", float("nan"), (float("nan"),) * 2, 0, float("nan")), ">=", 0.0,
                  Decision("ci")) == Verdict("inconclusive", "no paired observations", math.inf, math.inf, True,
                                             "untestable on this data")
    one = Effect("difference", 0.1, (float("nan"),) * 2, 1, float("nan"))
    assert decide(one, ">=", 0.0, Decision("ci")) == Verdict(
        "inconclusive", "interval undefined", None, math.inf, False,
        "unknown: no interval from 1 observation, so no spread to plan a study from")
    rel = Effect("relative", math.inf, (float("nan"),) * 2, 6, 0.3)
    v = decide(rel, ">=", 0.1, Decision("ci"))
    assert v.mde == pytest.approx(minimum_detectable_effect(0.3, 6)) and v.queries_needed == math.inf
    assert v.needed_for == "untestable on this data"
    half = Effect("difference", 0.12, (0.05, 0.19), 30, 0.2)
    v = decide(half, ">=", 0.1, Decision("ci", confidence=0.9))
    from harness.stats._verdict import queries_needed

    assert v.queries_needed == queries_needed(0.2, 0.02, confidence=0.9, n=30) and not v.untestable
    assert v.mde == pytest.approx(minimum_detectable_effect(0.2, 30, confidence=0.9))
    assert v.reason == "the 95% CI [0.05, 0.19] straddles 0.1"  # the interval's own level (Effect.confidence)
    assert decide(half, ">=", 0.01, Decision("ci")).reason == "the whole 95% CI [0.05, 0.19] satisfies >= 0.01"
    assert decide(half, ">=", 0.3, Decision("ci")).reason == "the whole 95% CI [0.05, 0.19] violates >= 0.3"
    low = Effect("difference", -0.01, (-0.03, 0.01), 40, 0.05, attainable=(-0.5, 0.02))
    assert decide(low, ">=", 0.05, Decision("ci")).untestable
    assert not decide(low, "<=", 0.05, Decision("ci")).untestable
    assert not decide(Effect("difference", 0.1, (0.0, 0.2), 9, 0.1, attainable=(-0.5, 0.5)), ">", 0.05,
                      Decision("ci")).untestable


def _bca_by_formula(theta, reps, jack, confidence):
    """Efron's BCa, written out step by step (independent of harness.stats.intervals)."""
    reps = np.asarray(reps, float)
    reps = reps[np.isfinite(reps)]
    b = len(reps)
    prop = (np.count_nonzero(reps < theta) + 0.5 * np.count_nonzero(reps == theta)) / b
    prop = min(max(prop, 1 / (b + 1)), 1 - 1 / (b + 1))
    z0 = st.norm.ppf(prop)
    dev = np.mean(jack) - np.asarray(jack, float)
    acc = np.sum(dev ** 3) / (6 * np.sum(dev ** 2) ** 1.5) if np.sum(dev ** 2) > 0 else 0.0
    lo_q, hi_q = [st.norm.cdf(z0 + (z0 + z) / (1 - acc * (z0 + z)))
                  for z in (st.norm.ppf((1 - confidence) / 2), st.norm.ppf((1 + confidence) / 2))]
    return float(np.quantile(reps, lo_q)), float(np.quantile(reps, hi_q))


def test_bca_from_replicates_by_the_formula_and_its_edges():
    from harness.stats.intervals import bca_from_replicates

    rng = np.random.default_rng(11)
    reps = np.concatenate([rng.gamma(2.0, 0.05, 3000), [np.inf, np.nan]])
    jack = rng.gamma(2.0, 0.02, 40)
    for theta, conf in ((0.1, 0.95), (0.08, 0.9), (0.12, 0.8)):
        assert bca_from_replicates(theta, reps, jack, confidence=conf) == pytest.approx(
            _bca_by_formula(theta, reps, jack, conf), abs=1e-12)
    tied = np.array([0.1, 0.1, 0.2, 0.3, 0.1, 0.4])  # replicates equal to theta count half
    assert bca_from_replicates(0.1, tied, [1, 2, 3.5]) == pytest.approx(_bca_by_formula(0.1, tied, [1, 2, 3.5], .95))
    assert bca_from_replicates(-5.0, reps, jack) == pytest.approx(_bca_by_formula(-5.0, reps, jack, 0.95))
    assert bca_from_replicates(0.1, reps, [0.3, 0.3, 0.3]) == pytest.approx(_bca_by_formula(0.1, reps, [.3] * 3, .95))
    assert bca_from_replicates(0.2, [0.2, 0.2, 0.2], jack) == (0.2, 0.2)
    assert bca_from_replicates(0.5, [0.5], jack) == (0.5, 0.5)
    assert all(math.isnan(v) for v in bca_from_replicates(0.1, [], jack))
    assert all(math.isnan(v) for v in bca_from_replicates(float("nan"), reps, jack))
    assert all(math.isnan(v) for v in bca_from_replicates(0.1, [np.inf, np.nan], jack))


def test_bootstrap_intervals_of_the_mean_by_hand():
    from harness.stats.intervals import bca_interval, bootstrap_means, percentile_interval

    x = np.random.default_rng(12).gamma(1.5, 0.2, 35)
    w = np.random.default_rng(4).multinomial(35, np.full(35, 1 / 35), size=3000)
    means = (w @ x) / 35
    assert bootstrap_means(x, n_resamples=3000, seed=4) == pytest.approx(means)
    assert percentile_interval(x, confidence=0.9, n_resamples=3000, seed=4) == pytest.approx(
        (np.quantile(means, 0.05), np.quantile(means, 0.95)))
    jack = (x.sum() - x) / 34
    assert bca_interval(x, confidence=0.9, n_resamples=3000, seed=4) == pytest.approx(
        _bca_by_formula(x.mean(), means, jack, 0.9), abs=1e-12)
    assert bca_interval([0.3], n_resamples=10) == (-math.inf, math.inf)
    assert all(math.isnan(v) for v in bca_interval([], n_resamples=10))
    assert all(math.isnan(v) for v in percentile_interval([], n_resamples=10))


def test_relative_bootstrap_intervals_by_hand():
    a, b = _pair(13, n=30)
    n, B = len(a), 2000
    w = np.random.default_rng(6).multinomial(n, np.full(n, 1 / n), size=B)
    reps = (w @ a) / (w @ b) - 1
    e = paired_effect(a, b, relative=True, interval="percentile", n_resamples=B, seed=6, confidence=0.9)
    assert e.ci == pytest.approx((np.quantile(reps, 0.05), np.quantile(reps, 0.95)))
    est = a.mean() / b.mean() - 1
    jack = ((a.sum() - a) / (n - 1)) / ((b.sum() - b) / (n - 1)) - 1
    e = paired_effect(a, b, relative=True, interval="bca", n_resamples=B, seed=6, confidence=0.9)
    assert e.ci == pytest.approx(_bca_by_formula(est, reps, jack, 0.9), abs=1e-12)
    two = paired_effect([0.5, 0.7], [0.25, 0.5], relative=True, interval="bca", n_resamples=500)
    assert all(math.isfinite(v) for v in two.ci)


def test_effect_fields_at_the_edges():
    tie = 1e-12
    e = paired_effect([tie, -tie, 0.3, 0.1], [0.0, 0.0, 0.1, 0.3], bounds=None, confidence=0.9)
    assert (e.improved, e.unchanged, e.degraded) == (1, 2, 1) and e.confidence == 0.9
    assert e.ci == pytest.approx(st.t.interval(0.9, 3, loc=np.mean([tie, -tie, 0.2, -0.2]),
                                               scale=st.sem([tie, -tie, 0.2, -0.2])))
    pair = paired_effect([0.5, 0.9], [0.4, 0.4])
    assert pair.sd == pytest.approx(np.std([0.1, 0.5], ddof=1))
    rel2 = paired_effect([0.5, 0.9], [0.4, 0.5], relative=True)
    assert math.isfinite(rel2.sd) and rel2.confidence == 0.95
    flags = paired_effect([True, False, True, True], [False, False, True, False], binary=True)
    assert flags.estimate == 0.5 and flags.p_values["mcnemar"] == pytest.approx(0.25)
    assert paired_effect([0.5, 0.6], [0.4, 0.5], relative=True, bounds=(0.2, 1.0)).attainable == pytest.approx(
        (0.2 / 0.45 - 1, 1 / 0.45 - 1))
    p1 = paired_effect([0.5, 0.9, 0.2, 0.4], [0.4, 0.4, 0.3, 0.1], interval="percentile", n_resamples=300, seed=5)
    assert p1.ci == paired_effect([0.5, 0.9, 0.2, 0.4], [0.4, 0.4, 0.3, 0.1], interval="percentile",
                                  n_resamples=300, seed=5).ci
    zero = paired_effect([0.2, 0.4], [0.0, 0.0], relative=True, confidence=0.8)
    assert (zero.kind, zero.estimate, zero.n, zero.confidence) == ("relative", math.inf, 2, 0.8)
    assert math.isnan(zero.sd) and zero.baseline_mean == 0.0 and zero.candidate_mean == pytest.approx(0.3)
    assert zero.improved == 2 and zero.p_values["t"] == pytest.approx(st.ttest_1samp([0.2, 0.4], 0).pvalue)


def test_cohens_dz_degenerate_and_kendall_with_two_levels():
    from harness.stats._paired import kendall_tau

    assert cohens_dz([0.5], [0.2]) == math.inf and cohens_dz([0.2], [0.5]) == -math.inf
    assert cohens_dz([0.5, 0.75], [0.25, 0.5]) == math.inf and cohens_dz([0.25, 0.5], [0.5, 0.75]) == -math.inf
    assert cohens_dz([0.4], [0.4]) == 0.0
    assert kendall_tau([1, 2, 1, 2], [0, 1, 0, 1]) == pytest.approx(1.0)
    assert kendall_tau([0, 1, 0, 1], [1, 2, 3, 4]) == pytest.approx(st.kendalltau([0, 1, 0, 1], [1, 2, 3, 4]).statistic)


def test_queries_for_power_names_the_bad_argument():
    with pytest.raises(ValueError, match="effect and sd must be positive"):
        calib.queries_for_power(0.0, 0.1)


def test_power_simulation_step_by_step():
    """The power simulation written out (same seed, same draws): hits are the simulations whose t-interval lies
    wholly above 0."""
    rng0 = np.random.default_rng(21)
    a, b = rng0.random(50), rng0.random(50)
    r = calib.power_at_prediction(a, b, 0.2, share=0.4, sims=300, seed=8, confidence=0.9)
    rng = np.random.default_rng(8)
    base = np.concatenate([a - b, b - a])
    sd = math.sqrt(np.mean(base ** 2) + 0.2 ** 2 * 0.6 / 0.4)
    n = calib.queries_for_power(sd, 0.2, confidence=0.9)
    D = base[rng.integers(0, len(base), size=(300, n))] + (rng.random((300, n)) < 0.4) * (0.2 / 0.4)
    lo = D.mean(axis=1) - st.t.ppf(0.95, n - 1) * D.std(axis=1, ddof=1) / math.sqrt(n)
    assert (r.predicted_n, r.sd) == (n, pytest.approx(sd))
    assert r.measured_power == np.sum(lo > 0) / 300
    default = calib.power_at_prediction(a, b, 0.2)
    assert default.sims == 1000 and default.share == 0.5
    assert default.measured_power == calib.power_at_prediction(a, b, 0.2, seed=0).measured_power
    assert default.predicted_n == calib.queries_for_power(default.sd, 0.2, confidence=0.95)


def test_context_dicts_for_the_report():
    from harness.stats.latency import ratio_of
    from harness.stats._verdict import Verdict

    r = ratio_of([1.0, 2.0, 4.0], [2.0, 3.0, 4.0])
    assert r.as_context() == {"kind": "latency_ratio", "iqr": [r.q25, r.q75], "rounds": 3,
                              "baseline_median_s": 2.0, "candidate_median_s": 3.0}
    assert (r.median, r.q25, r.q75) == (pytest.approx(1.5), pytest.approx(1.25), pytest.approx(1.75))
    v = Verdict("inconclusive", "why", math.inf, 0.1, False)
    assert v.as_context() == {"verdict": "inconclusive", "reason": "why", "queries_needed": "never", "mde": 0.1,
                              "untestable": False, "needed_for": None}
    assert Verdict("supported", "ok", 12.0, 0.1).as_context()["queries_needed"] == 12.0
    assert Decision("ci", confidence=0.9).describe() == "90% CI vs threshold"
    assert Decision("test", "mcnemar", 0.15).describe() == "mcnemar p < 0.15 (Holm) and estimate vs threshold"
    assert Decision().describe() == "point estimate vs threshold" and not Decision().comparative
    assert Decision("ci").comparative and Decision("test", "t").comparative


def test_bootstrap_ci_and_paired_difference_by_hand():
    from harness.stats._paired import bootstrap_ci, paired_difference

    x = np.array([0.1, 0.4, 0.35, 0.8, 0.05, 0.6, 0.3])
    idx = np.random.default_rng(3).integers(0, 7, size=(2000, 7))
    means = x[idx].mean(axis=1)
    assert bootstrap_ci(x, confidence=0.8, n_resamples=2000, seed=3) == pytest.approx(
        (np.quantile(means, 0.1), np.quantile(means, 0.9)))
    assert bootstrap_ci([1, 3, 2, 5]) == bootstrap_ci([1.0, 3.0, 2.0, 5.0], seed=0)
    assert all(math.isnan(v) for v in bootstrap_ci([]))
    b = np.zeros(7)
    pd_ = paired_difference(x, b, confidence=0.8, n_resamples=2000, seed=3)
    assert (pd_.mean, pd_.n, pd_.confidence) == (pytest.approx(x.mean()), 7, 0.8)
    assert pd_.ci == pytest.approx((np.quantile(means, 0.1), np.quantile(means, 0.9)))
    assert paired_difference(x, b).ci == bootstrap_ci(x, seed=0, n_resamples=10_000)
    assert math.isnan(paired_difference([], []).mean)


def test_interleaved_ratio_alternates_order_and_passes_inputs():
    from harness.stats.latency import interleaved_ratio, ratio_of

    calls = []
    ticks = iter(range(1000))
    r = interleaved_ratio(lambda x: calls.append(("b", x)), lambda x: calls.append(("c", x)), ["p", "q", "r"],
                          warmup=2, clock=lambda: next(ticks))
    assert calls[:4] == [("b", "p"), ("c", "p"), ("b", "q"), ("c", "q")]  # warm-up over the first two inputs
    assert calls[4:] == [("b", "p"), ("c", "p"), ("c", "q"), ("b", "q"), ("b", "r"), ("c", "r")]
    assert r.rounds == 3 and r.median == 1.0
    more = iter(range(1000))
    assert interleaved_ratio(lambda x: None, lambda x: calls.append(x), [7], clock=lambda: next(more)).rounds == 1
    assert calls[-2:] == [7, 7]  # the default warm-up runs each arm once on the first input
    assert ratio_of([1, 2], [3, 4]).median == pytest.approx(2.5)


def test_proportion_reads_truthiness():
    assert proportion_effect([2, 0, 1, 0]).estimate == 0.5


def test_mcnemar_exact_switch_and_relative_ci_by_hand():
    from harness.stats._paired import holm, mcnemar

    a = np.array([1] * 20 + [0] * 4 + [1] * 10, bool)
    b = np.array([0] * 20 + [1] * 4 + [1] * 10, bool)
    r = mcnemar(a, b)
    assert (r.b, r.c, r.exact) == (4, 20, True) and r.p_value == pytest.approx(st.binomtest(4, 24, 0.5).pvalue)
    a2, b2 = np.append(a, True), np.append(b, False)
    r2 = mcnemar(a2, b2)
    assert r2.exact is False and r2.statistic == pytest.approx((abs(4 - 21) - 1) ** 2 / 25)
    assert mcnemar([2, 0], [0, 0]).c == 1
    with pytest.raises(ValueError, match="same length"):
        mcnemar([1, 0], [1])
    rej, adj = holm([0.01, 0.04, 0.03], alpha=0.1)
    assert rej == [True, True, True] and adj == pytest.approx([0.03, 0.06, 0.06])
    assert holm([0.01, 0.04, 0.03])[0] == [True, False, False] and holm([]) == ([], [])


def test_relative_improvement_ci_by_hand():
    from harness.stats._paired import relative_improvement_ci

    a, b = _pair(17, n=25)
    idx = np.random.default_rng(2).integers(0, 25, size=(1500, 25))
    rel = a[idx].mean(axis=1) / b[idx].mean(axis=1) - 1
    assert relative_improvement_ci(a, b, confidence=0.8, n_resamples=1500, seed=2) == pytest.approx(
        (np.quantile(rel, 0.1), np.quantile(rel, 0.9)))
    assert relative_improvement_ci(a, b) == relative_improvement_ci(a, b, seed=0, n_resamples=10_000)
    assert all(math.isnan(v) for v in relative_improvement_ci([0.5], [0.0], n_resamples=20))
    x = relative_improvement_ci([0.5, 0.6], [0.0, 0.3], n_resamples=500, seed=1)  # resamples of baseline 0 dropped
    assert all(math.isfinite(v) for v in x)


def test_row_quantiles_match_numpy():
    R = np.random.default_rng(3).random((4, 9))
    q = np.array([0.0, 1.0, 0.37, 0.999])
    got = calib._quantile_rows(R, q)
    assert got == pytest.approx([np.quantile(R[i], q[i]) for i in range(4)])
    assert calib._quantile_rows(R, np.array([-0.5, 1.5, 0.5, 0.5]))[:2] == pytest.approx([R[0].min(), R[1].max()])


def test_agresti_min_interval_by_hand():
    """Agresti & Min (2005): 1/2 added to each cell, then Wald; computed by hand below."""
    from harness.stats.intervals import agresti_min_interval

    z = 1.959963984540054
    # five questions, none discordant: p_i = p_d = 0.5/7, half-width z*sqrt((1/7)/7) = z/7
    lo, hi = agresti_min_interval([0] * 5, [0] * 5)
    assert lo == pytest.approx(-z / 7, abs=1e-12) and hi == pytest.approx(z / 7, abs=1e-12)
    # ten questions, 3 improved, 1 degraded: p_i = 3.5/12, p_d = 1.5/12, centre 1/6,
    # half-width z*sqrt((5/12 - 1/36)/12)
    lo, hi = agresti_min_interval([1, 1, 1, 0] + [0] * 6, [0, 0, 0, 1] + [0] * 6)
    half = z * math.sqrt((5 / 12 - 1 / 36) / 12)
    assert (lo, hi) == (pytest.approx(1 / 6 - half, abs=1e-12), pytest.approx(1 / 6 + half, abs=1e-12))


def test_binary_paired_effect_with_only_ties_cannot_be_decided():
    """All five answers wrong in both arms: the t interval would be (0, 0) and refute a +5-point claim."""
    eff = paired_effect([0.0] * 5, [0.0] * 5, binary=True)
    assert eff.interval_method == "agresti-min" and eff.ci[0] < 0 < 0.05 < eff.ci[1]
    assert eff.sd == pytest.approx(math.sqrt(1 / 7))  # p_i = p_d = 0.5/7: sqrt(p_i + p_d)
    assert decide(eff, ">=", 0.05, Decision("ci")).verdict == "inconclusive"
    t = paired_effect([0.0] * 5, [0.0] * 5)  # not binary: the ties interval, ±(1 - 0.025^(1/5)) = ±0.522
    assert t.interval_method == "ties" and t.ci[1] == pytest.approx(1 - 0.025 ** 0.2)
    assert decide(t, ">=", 0.05, Decision("ci")).verdict == "inconclusive"


def test_difference_interval_of_bounded_scores_stays_within_the_bounds():
    """Three queries scoring 1, 0, 1 against 0, 1, 0 (differences 1, -1, 1): by hand the t interval is
    1/3 ± t(0.975, 2)·sd/√3 = 1/3 ± 4.3027·1.1547/1.7321 = [-2.535, 3.202], past what a difference of 0..1 scores
    can be; it is cut to [-1, 1]. Unbounded scores keep the t interval, and an interval inside the bounds is kept."""
    e = paired_effect([1.0, 0.0, 1.0], [0.0, 1.0, 0.0])
    assert e.ci == (-1.0, 1.0) and all(type(x) is float for x in e.ci)
    assert paired_effect([1.0, 0.0, 1.0], [0.0, 1.0, 0.0], bounds=None).ci == pytest.approx((-2.5351, 3.2018),
                                                                                             abs=1e-4)
    assert paired_effect([0.5, 0.0, 0.5], [0.0, 0.5, 0.0], bounds=(0, 2)).ci == pytest.approx((-1.2676, 1.6009),
                                                                                             abs=1e-4)


def test_the_verdicts_quantiles_are_scipys_remembered():
    from harness.stats._verdict import _quantile

    assert _quantile("norm", 0.975) == st.norm.ppf(0.975) and _quantile("norm", 0.8) == st.norm.ppf(0.8)
    assert _quantile("t", 0.975, 29) == st.t.ppf(0.975, 29) and _quantile("chi2", 0.2, 29) == st.chi2.ppf(0.2, 29)
    hits = _quantile.cache_info().hits
    assert _quantile("t", 0.975, 29) == st.t.ppf(0.975, 29) and _quantile.cache_info().hits == hits + 1
