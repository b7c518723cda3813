"""Three-valued verdicts, intervals, effects and the calibration simulations, against hand-computed values
and independent libraries (scipy, statsmodels), including the degenerate cases."""
from __future__ import annotations

import dataclasses

import math

import numpy as np
import pytest
from scipy import stats as st

from harness.stats import calibration as calib
from harness.stats._effect import Effect, mcnemar_midp, paired_effect, paired_t_pvalue, proportion_effect
from harness.stats.intervals import bca_interval, percentile_interval, t_interval, wilson_interval
from harness.stats._verdict import Decision, decide, minimum_detectable_effect, queries_needed

pytestmark = pytest.mark.unit
CI = Decision("ci")
MCNEMAR = Decision("test", "mcnemar", 0.15)


def effect(est, lo, hi, *, n=30, sd=0.2, p=None, attainable=None, kind="difference"):
    return Effect(kind, est, (lo, hi), n, sd, p_values={"mcnemar": p} if p is not None else {},
                  primary_test="mcnemar" if p is not None else None, attainable=attainable)


# ---------------------------------------------------------------- intervals
def test_t_interval_hand_computed_and_scipy():
    lo, hi = t_interval([1, 2, 3, 4])
    # mean 2.5, sd 1.290994, t(0.975, 3) = 3.182446 -> half 2.054260
    assert (lo, hi) == pytest.approx((0.445740, 4.554260), abs=1e-6)
    x = np.random.default_rng(3).normal(size=25)
    ref = st.t.interval(0.95, len(x) - 1, loc=x.mean(), scale=st.sem(x))
    assert t_interval(x) == pytest.approx(ref, abs=1e-12)


def test_interval_degenerate_cases():
    assert all(math.isnan(v) for v in t_interval([]))
    assert t_interval([0.3]) == (float("-inf"), float("inf"))
    assert t_interval([0.2, 0.2, 0.2]) == (0.2, 0.2)
    assert bca_interval([0.0, 0.0, 0.0]) == (0.0, 0.0)


def test_wilson_hand_computed_and_statsmodels():
    from statsmodels.stats.proportion import proportion_confint

    assert wilson_interval(0, 35) == pytest.approx((0.0, 0.098901), abs=1e-6)  # centre = half = 0.0494505
    # the bound at 0 (or n) successes is exact, not a rounding residue: upper = z²/(n + z²) = 3.841459/53.841459
    assert wilson_interval(0, 50)[0] == 0.0 and wilson_interval(0, 50)[1] == pytest.approx(0.071347, abs=1e-6)
    assert wilson_interval(50, 50)[1] == 1.0 and wilson_interval(50, 50)[0] == pytest.approx(0.928653, abs=1e-6)
    for k, n in ((0, 35), (7, 10), (29, 30), (15, 30)):
        assert wilson_interval(k, n) == pytest.approx(proportion_confint(k, n, method="wilson"), abs=1e-12)


def test_bootstrap_intervals_bracket_the_mean_and_match_scipy_bca():
    x = np.random.default_rng(5).exponential(size=40)
    lo, hi = percentile_interval(x, seed=1)
    assert lo < x.mean() < hi
    ref = st.bootstrap((x,), np.mean, method="BCa", n_resamples=20_000, random_state=2).confidence_interval
    lo, hi = bca_interval(x, n_resamples=20_000, seed=1)
    assert lo == pytest.approx(ref.low, abs=0.03) and hi == pytest.approx(ref.high, abs=0.03)


# ---------------------------------------------------------------- tests and effects
def test_mcnemar_midp_hand_computed():
    # b = 1 (baseline only right), c = 6 (candidate only right): 2*P(X<=1) - P(X=1), X ~ Bin(7, 1/2) = 9/128
    cand = [True] * 6 + [False] + [True] * 5
    base = [False] * 6 + [True] + [True] * 5
    assert mcnemar_midp(cand, base) == pytest.approx(9 / 128)
    assert mcnemar_midp([True, False], [True, False]) == 1.0


def test_paired_t_pvalue_matches_scipy_and_degenerates():
    rng = np.random.default_rng(9)
    a, b = rng.random(30), rng.random(30)
    assert paired_t_pvalue(a - b) == pytest.approx(st.ttest_rel(a, b).pvalue, abs=1e-12)
    assert paired_t_pvalue(np.zeros(5)) == 1.0
    assert paired_t_pvalue(np.full(5, 0.1)) == 0.0


def test_paired_effect_counts_ties_and_headroom():
    cand = [0.5, 0.5, 0.9, 0.1, 1.0]
    base = [0.5, 0.4, 0.9, 0.3, 0.8]
    e = paired_effect(cand, base)
    assert (e.improved, e.unchanged, e.degraded) == (2, 2, 1)
    assert e.estimate == pytest.approx(0.02)  # differences 0, .1, 0, -.2, .2
    assert e.attainable == pytest.approx((0.0 - 0.58, 1.0 - 0.58))
    assert e.ci == pytest.approx(t_interval(np.subtract(cand, base)))


def test_relative_effect_delta_method_hand_computed():
    e = paired_effect([1.0, 2.0], [1.0, 1.0], relative=True, bounds=None)
    # est = 1.5/1 - 1 = 0.5; psi = a - 1.5 b = [-0.5, 0.5]; sd = 0.70711; half = t(0.975, 1) * 0.70711 / sqrt 2
    half = st.t.ppf(0.975, 1) * math.sqrt(0.5) / math.sqrt(2)
    assert e.estimate == pytest.approx(0.5) and e.ci == pytest.approx((0.5 - half, 0.5 + half))


def test_relative_effect_over_a_zero_baseline_is_infinite_and_inconclusive():
    e = paired_effect([0.2, 0.0, 0.1], [0.0, 0.0, 0.0], relative=True)
    assert e.estimate == float("inf")
    v = decide(e, ">=", 0.05, CI)
    assert v.verdict == "inconclusive" and "baseline mean of 0" in v.reason


def test_proportion_effect():
    e = proportion_effect([True] * 3 + [False] * 7)
    assert e.estimate == 0.3 and e.ci == pytest.approx(wilson_interval(3, 10)) and e.sd == pytest.approx(math.sqrt(0.21))


# ---------------------------------------------------------------- decision rules
@pytest.mark.parametrize("ci, expected", [
    ((0.06, 0.20), "supported"),
    ((-0.20, 0.04), "refuted"),
    ((0.01, 0.12), "inconclusive"),
    ((0.05, 0.12), "supported"),   # >= : the bound itself satisfies the claim
])
def test_ci_rule_greater_or_equal(ci, expected):
    assert decide(effect(sum(ci) / 2, *ci), ">=", 0.05, CI).verdict == expected


@pytest.mark.parametrize("ci, expected", [
    ((0.0, 0.12), "inconclusive"),  # > : a bound equal to the threshold does not satisfy it
    ((-0.2, 0.0), "refuted"),       # ... and the whole interval at or below 0 violates it
    ((0.001, 0.12), "supported"),
])
def test_ci_rule_strictly_greater(ci, expected):
    assert decide(effect(sum(ci) / 2, *ci), ">", 0.0, CI).verdict == expected


@pytest.mark.parametrize("ci, expected", [((1.1, 1.2), "supported"), ((1.35, 1.5), "refuted"), ((1.2, 1.4), "inconclusive")])
def test_ci_rule_less_than(ci, expected):
    assert decide(effect(sum(ci) / 2, *ci), "<", 1.3, CI).verdict == expected


@pytest.mark.parametrize("est, ci, p, adjusted, expected", [
    (0.05, (-0.02, 0.12), 0.10, None, "supported"),       # p < 0.15 and +5 >= +4 points
    (0.03, (-0.02, 0.08), 0.10, None, "inconclusive"),    # significant but under +4 points
    (0.06, (-0.02, 0.14), 0.20, None, "inconclusive"),    # +6 points but p >= 0.15
    (0.05, (-0.02, 0.12), 0.10, 0.30, "inconclusive"),    # Holm-adjusted p decides
    (-0.10, (-0.2, 0.0), 0.01, None, "refuted"),          # significant the wrong way: the CI refutes
])
def test_test_rule_mcnemar_gate(est, ci, p, adjusted, expected):
    v = decide(effect(est, *ci, p=p), ">=", 0.04, MCNEMAR, p_value=adjusted)
    assert v.verdict == expected


def test_claim_beyond_the_metrics_headroom_is_untestable_not_refuted():
    # baseline recall 0.95: at most +5.3% relative is attainable; the claim needs +10%
    e = effect(-0.01, -0.03, 0.01, attainable=(-1.0, 1 / 0.95 - 1), kind="relative")
    v = decide(e, ">=", 0.10, CI)
    assert v.verdict == "inconclusive" and v.untestable and "untestable" in v.reason
    # no number of queries decides it: the row says "never", and why, not a power calculation's count
    from harness.report.terminal import needed_text

    assert v.as_context()["queries_needed"] == "never" and v.needed_for == "untestable on this data"
    assert needed_text({"verdict": "inconclusive", "untestable": True, "queries_needed": 52}) == \
        "never (untestable on this data)"  # a report from before "never" was recorded for it


def test_an_estimate_at_the_threshold_needs_never_and_says_why():
    from harness.report.terminal import needed_text

    v = decide(effect(0.05, -0.05, 0.15), ">=", 0.05, CI)
    assert v.verdict == "inconclusive" and v.queries_needed == math.inf and v.needed_for == "estimate = threshold"
    assert needed_text(v.as_context()) == "never (estimate = threshold)"
    assert decide(effect(0.06, -0.05, 0.15), ">=", 0.05, CI).needed_for is None  # a count, from the power


def test_where_the_data_give_no_figure_the_row_says_unknown_and_why():
    """No interval (one pair) or no spread (every paired difference equal): no power calculation can be made, so
    the row gives no count but says why, rather than nothing."""
    from harness.report.terminal import needed_text

    one = decide(Effect("difference", 0.1, (float("nan"),) * 2, 1, float("nan")), ">=", 0.0, CI)
    assert one.queries_needed is None and one.needed_for == \
        "unknown: no interval from 1 observation, so no spread to plan a study from"
    assert needed_text(one.as_context()) == "unknown (no interval from 1 observation, so no spread to plan a study from)"
    same = decide(paired_effect(np.full(10, 3.0), np.full(10, 2.0), bounds=None), ">=", 0.5, CI)
    assert same.verdict == "inconclusive" and same.queries_needed is None
    assert needed_text(same.as_context()) == "unknown (the paired differences have no spread (sd 0) to plan a study from)"
    # an undefined interval whose spread is known still gives the power's count
    known = decide(Effect("difference", 0.1, (float("nan"),) * 2, 20, 0.3), ">=", 0.0, CI)
    assert known.queries_needed is not None and known.needed_for is None
    assert needed_text({"verdict": "inconclusive", "queries_needed": None}) == ""  # an old report: nothing to say


def test_all_zero_differences():
    """30 tied pairs do not collapse the interval to (0, 0): at most 1 - 0.025^(1/30) = 11.6% of queries could
    differ (Clopper-Pearson), each by at most the metric's range 1, so the mean lies within ±0.1157."""
    e = paired_effect(np.full(30, 0.4), np.full(30, 0.4))
    bound = 1 - 0.025 ** (1 / 30)
    assert e.interval_method == "ties" and e.ci == pytest.approx((-bound, bound)) and bound == pytest.approx(0.1157, abs=1e-4)
    assert (e.improved, e.unchanged, e.degraded) == (0, 30, 0)
    assert decide(e, ">=", 0.05, CI).verdict == "inconclusive"
    assert decide(e, ">=", 0.0, CI).verdict == "inconclusive"
    assert decide(e, ">=", 0.2, CI).verdict == "refuted"
    assert e.p_values["t"] == 1.0 and e.p_values["wilcoxon"] == 1.0
    many = paired_effect(np.full(200, 0.4), np.full(200, 0.4))  # ±0.0183: 200 ties do refute +0.05
    assert many.ci[1] == pytest.approx(1 - 0.025 ** (1 / 200)) and decide(many, ">=", 0.05, CI).verdict == "refuted"


def test_a_zero_width_interval_cannot_decide():
    """Equal non-zero differences (or ties of an unbounded metric) give a zero-width interval: inconclusive."""
    e = paired_effect(np.full(10, 0.5), np.full(10, 0.4))
    assert e.ci[0] == pytest.approx(e.ci[1])
    v = decide(dataclasses.replace(e, ci=(0.1, 0.1)), ">=", 0.2, CI)
    assert v.verdict == "inconclusive" and "degenerate" in v.reason
    unbounded = paired_effect(np.full(10, 3.0), np.full(10, 3.0), bounds=None)
    assert unbounded.ci == (0.0, 0.0) and decide(unbounded, ">=", 0.05, CI).verdict == "inconclusive"


def test_a_known_constant_quantity_on_the_violating_side_is_refuted():
    """A judge that says "supported" to all 40 items (20 labelled right, 20 wrong): p_o = 20/40 = p_e =
    (40·20)/40² = 0.5, so κ = 0 on the sample and on every resample (a constant rater agrees only by chance);
    its interval [0, 0] is the true value, not a degenerate sample, and refutes κ >= 0.4."""
    from harness.judge.reliability import JudgeReliability

    labels = [True] * 20 + [False] * 20
    constant = JudgeReliability.measure("always-yes", "hand", [True] * 40, labels)
    assert constant.kappa == 0.0 and constant.kappa_ci == (0.0, 0.0) and constant.kappa_exact
    kappa = Effect("kappa", constant.kappa, constant.kappa_ci, constant.n, 0.0, exact=constant.kappa_exact)
    v = decide(kappa, ">=", 0.4, CI)
    assert v.verdict == "refuted" and "exactly 0 by construction" in v.reason and v.queries_needed is None
    assert decide(kappa, "<", 0.4, CI).verdict == "supported"
    # the same zero-width interval from a sample that merely happened to agree everywhere cannot decide
    assert decide(dataclasses.replace(kappa, exact=False), ">=", 0.4, CI).verdict == "inconclusive"
    # a judge whose labels vary is an estimate; so is a constant judge against constant labels (κ undefined)
    mixed = JudgeReliability.measure("j", "hand", [True] * 30 + [False] * 10, labels)
    assert not mixed.kappa_exact and mixed.kappa == pytest.approx(0.5)  # p_o = 0.75, p_e = 0.5
    assert not JudgeReliability.measure("j", "hand", [True] * 4, [True] * 4).kappa_exact
    # a sample's degeneracy stays inconclusive however far it lies from the threshold
    same = paired_effect(np.full(10, 0.5), np.full(10, 0.4), bounds=None)
    assert same.ci[0] == same.ci[1] and not same.exact and decide(same, ">=", 0.9, CI).verdict == "inconclusive"


def test_paired_binary_ties_are_decided_by_their_interval_never_zero_width():
    """30 tied 0/1 pairs (both arms wrong everywhere, so +1 is attainable): Agresti-Min adds 1/2 to each cell, p_i = p_d = 0.5/32 = 0.015625, centre 0, sd
    sqrt(0.03125) = 0.1767767, half-width 1.959964·0.1767767/sqrt(32) = 0.0612489: [-0.0612, 0.0612] refutes
    +0.1 by its width, not by collapsing to a point."""
    ties = paired_effect(np.zeros(30), np.zeros(30), binary=True)
    assert ties.interval_method == "agresti-min" and ties.ci == pytest.approx((-0.0612489, 0.0612489), abs=1e-6)
    assert decide(ties, ">=", 0.1, CI).verdict == "refuted" and decide(ties, ">=", 0.05, CI).verdict == "inconclusive"


def test_single_query_is_inconclusive_and_cannot_extrapolate():
    v = decide(paired_effect([0.7], [0.2]), ">=", 0.05, CI)
    assert v.verdict == "inconclusive" and v.queries_needed is None and v.mde == float("inf")


def test_no_queries_is_inconclusive():
    assert decide(paired_effect([], []), ">=", 0.05, CI).verdict == "inconclusive"


def test_non_directional_comparator_is_rejected():
    with pytest.raises(ValueError, match="cannot be decided"):
        decide(effect(0.1, 0.0, 0.2), "==", 0.1, CI)


# ---------------------------------------------------------------- queries needed and MDE
def test_queries_needed_hand_computed():
    """Queries for 80% power in a new fixed-n study: (t(0.975, 32) + t(0.8, 32))/sqrt(33) = 0.50307 > 0.5 >=
    (t(0.975, 33) + t(0.8, 33))/sqrt(34) = 0.49514, so 34; statsmodels' exact noncentral-t power gives 33.37 -> 34."""
    from statsmodels.stats.power import TTestPower

    assert queries_needed(1.0, 0.5) == 34
    assert queries_needed(1.0, 0.5) == math.ceil(TTestPower().solve_power(effect_size=0.5, alpha=0.05, power=0.8))
    assert queries_needed(1.0, 0.0) == float("inf")
    assert queries_needed(float("nan"), 0.5) is None
    # conservative: the SD at its one-sided 80% upper confidence limit, sqrt(29 / chi2(0.2, 29)) = 1.13592 at n = 30
    up = math.sqrt(29 / st.chi2.ppf(0.2, 29))
    assert up == pytest.approx(1.135922, abs=1e-6)
    assert queries_needed(1.0, 0.5, n=30) == queries_needed(up, 0.5) == 43


def test_inconclusive_verdict_reports_queries_needed_for_80_percent_power():
    base = np.full(30, 0.5)
    cand = base + np.tile([0.25, -0.2], 15)  # mean +0.025, sd 0.2288: the CI straddles 0 at n = 30
    e = paired_effect(cand, base, bounds=None)
    v = decide(e, ">", 0.0, CI)
    assert v.verdict == "inconclusive"
    n = int(v.queries_needed)
    sd = e.sd * math.sqrt(29 / st.chi2.ppf(0.2, 29))
    assert minimum_detectable_effect(sd, n) <= abs(e.estimate) < minimum_detectable_effect(sd, n - 1)
    # what the report prints beside it
    from harness.report.terminal import needed_text

    assert needed_text({"verdict": "inconclusive", "queries_needed": n, "available": 30}) == \
        f"{n} for 80% power (> 30 available)"


def test_mde_hand_computed():
    # (t(0.975, 29) + t(0.8, 29)) / sqrt(30) = (2.045230 + 0.854192) / 5.477226
    assert minimum_detectable_effect(1.0, 30) == pytest.approx(0.529360, abs=1e-5)
    assert minimum_detectable_effect(1.0, 1) == float("inf")


# ---------------------------------------------------------------- calibration simulations (small, seeded)
def test_calibration_type1_under_the_null_and_power_against_an_effect():
    rng = np.random.default_rng(1)
    a, b = rng.beta(1, 2, 225), rng.beta(1, 2, 225)
    res = calib.type1_rates(a, b, n=30, sims=400, n_perm=500, n_boot=500, seed=2)
    assert all(0.0 <= r <= 0.15 for r in res.rates.values())
    # a real difference rejects far more often than alpha: the tests can fail
    res = calib.type1_rates(a + 0.15, b, n=30, sims=200, n_perm=200, n_boot=200, seed=2, null="swap")
    assert res.rates["t"] < 0.15  # swaps keep it null even with a shifted run (A/A by construction)
    cov = calib.coverage(a + 0.1, b, n=30, sims=400, n_boot=400, seed=3)
    assert cov.truth == pytest.approx(float(np.mean(a + 0.1 - b)))
    assert all(0.85 <= c <= 1.0 for c in cov.coverage.values())


def test_queries_for_power_inverts_the_mde():
    n = calib.queries_for_power(0.3, 0.05)
    assert minimum_detectable_effect(0.3, n) <= 0.05 < minimum_detectable_effect(0.3, n - 1)


def test_a_claim_whose_arms_fell_back_cannot_be_supported():
    e = effect(0.10, 0.06, 0.14)
    assert decide(e, ">=", 0.05, CI, fallback_rate=0.05).verdict == "supported"
    v = decide(e, ">=", 0.05, CI, fallback_rate=0.20)
    assert v.verdict == "inconclusive" and "fell back or failed on 20%" in v.reason
    # more queries measure the fallback too: never, and why (a point estimate's pass alike)
    from harness.report.terminal import needed_text
    from harness.stats._verdict import below_min_n, decide_estimate

    for withheld in (v, decide_estimate(True, fallback_rate=0.93)):
        ctx = withheld.as_context()
        assert ctx["queries_needed"] == "never" and "more queries measure the fallback" in ctx["needed_for"], ctx
        assert needed_text(ctx).startswith("never (at a fallback rate of ")
    assert decide_estimate(True, fallback_rate=0.05).queries_needed is None
    # inconclusive over the limit: on the claim's side more queries lead to a withheld support (never); on the
    # other side they can refute it, so the power figure stands
    wide = effect(0.10, -0.06, 0.26)
    held = decide(wide, ">=", 0.05, CI, fallback_rate=0.20)
    assert held.verdict == "inconclusive" and held.queries_needed == math.inf and "fallback" in held.needed_for
    assert decide(wide, ">=", 0.05, CI, fallback_rate=0.05).queries_needed < math.inf
    low = decide(effect(0.02, -0.10, 0.14), ">=", 0.05, CI, fallback_rate=0.20)
    assert low.verdict == "inconclusive" and low.queries_needed < math.inf and low.needed_for is None
    # too few items to support: the items the spec asks, and that reason
    short = below_min_n(decide(e, ">=", 0.05, CI), 30, 400)
    assert short.queries_needed == 400 and needed_text(short.as_context()) == "400 (the spec asks at least 400 items)"
    assert needed_text({**short.as_context(), "available": 250}) == \
        "400 (the spec asks at least 400 items; > 250 available)"  # a set smaller than the spec asks says so
    assert needed_text({**short.as_context(), "available": 8000}) == "400 (the spec asks at least 400 items)"
    # a refutation stands: falling back does not make a violated claim true
    assert decide(effect(-0.1, -0.2, 0.0), ">=", 0.05, CI, fallback_rate=0.5).verdict == "refuted"
