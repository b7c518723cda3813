"""Issue 36's production changes against independent values: the betting confidence sequence (checked against
`confseq`), Fieller's interval and the linear contrast relative claims decide on, the one-sided Clopper-Pearson
bound of the error gate, the seeded query order, and the anytime sequential design."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as st

from harness.stats._effect import anytime_intervals, paired_effect, proportion_effect, relative_contrast
from harness.stats._verdict import Decision, decide
from harness.stats.betting import betting_bounds, betting_interval
from harness.stats.intervals import clopper_pearson_lower, fieller_interval
from harness.stats.sampling import natural_key, ordered
from harness.stats.sequential import SequentialDesign, run_sequential

pytestmark = pytest.mark.unit
CI = Decision("ci")


def _confseq_cases() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(36)
    return {"beta": rng.beta(2, 5, 50), "bernoulli": (rng.random(40) < 0.9).astype(float), "uniform": rng.random(20)}


# confseq 0.0.11 (Waudby-Smith & Ramdas's package), `confseq.betting.betting_cs(x, alpha=0.05, breaks=4000,
# trunc_scale=c, running_intersection=False)`, last time point, on the samples of `_confseq_cases` (run from its
# sdist's pure-Python betting.py, numpy 2); its bounds sit on a grid of 1/4000 and are widened by one step.
CONFSEQ = {("beta", 0.5): (0.2195, 0.3865), ("beta", 0.75): (0.21225, 0.362),
           ("bernoulli", 0.5): (0.7775, 1.0), ("bernoulli", 0.75): (0.80175, 1.0),
           ("uniform", 0.5): (0.24125, 0.64725), ("uniform", 0.75): (0.213, 0.624)}


@pytest.mark.parametrize("name, c", sorted(CONFSEQ))
def test_betting_interval_matches_confseq(name, c):
    lo, hi = betting_interval(_confseq_cases()[name], 0.0, 1.0, confidence=0.95, c=c)
    ref_lo, ref_hi = CONFSEQ[(name, c)]
    assert ref_lo - 1e-9 <= lo <= ref_lo + 2 / 4000 and ref_hi - 2 / 4000 <= hi <= ref_hi + 1e-9


def test_betting_rows_are_the_one_sample_interval_and_respect_the_range():
    rng = np.random.default_rng(2)
    rows = rng.uniform(-1, 1, (5, 30)) ** 3
    lo, hi = betting_bounds(rows, -1.0, 1.0)
    for i, r in enumerate(rows):
        assert (lo[i], hi[i]) == pytest.approx(betting_interval(r, -1.0, 1.0))
        assert -1 <= lo[i] < r.mean() < hi[i] <= 1
    # a wider level is a wider interval; values outside the declared range are refused
    w = betting_interval(rows[0], -1, 1, confidence=0.99)
    assert w[0] < lo[0] and w[1] > hi[0]
    with pytest.raises(ValueError, match="outside"):
        betting_interval([0.5, 1.5], 0.0, 1.0)
    assert betting_interval([], 0.0, 1.0) == (0.0, 1.0)


def test_fieller_interval_by_hand():
    rng = np.random.default_rng(3)
    b = rng.uniform(0.2, 0.8, 25)
    a = np.clip(b * 1.2 + rng.normal(0, 0.1, 25), 0, 1)
    lo, hi = fieller_interval(a, b)
    q = st.t.ppf(0.975, 24)
    for rho in (lo, hi):  # the ends are where the contrast's t statistic is exactly ±q
        lin = a - rho * b
        assert abs(lin.mean()) / (lin.std(ddof=1) / 5) == pytest.approx(q, rel=1e-9)
    assert lo < a.mean() / b.mean() < hi
    # a baseline mean indistinguishable from 0: Fieller's set is unbounded
    assert fieller_interval([0.1, 0.3, 0.2], [0.01, -0.02, 0.015]) == (-math.inf, math.inf)


def test_clopper_pearson_lower_matches_statsmodels():
    from statsmodels.stats.proportion import proportion_confint

    for k, n in ((3, 10), (5, 10), (6, 20), (1, 30), (30, 30)):
        ref = proportion_confint(k, n, alpha=0.05, method="beta")[0]  # two-sided 95%: each side 97.5%
        assert clopper_pearson_lower(k, n, confidence=0.975) == pytest.approx(ref, abs=1e-12)
    assert clopper_pearson_lower(0, 10) == 0.0


def _contrast_case():
    """Thirty 0/1 pairs on which the delta method and the linear contrast disagree about '>= 5%'."""
    rng = np.random.default_rng(7)
    b = (rng.random(30) < 0.4).astype(float)
    c = b.copy()
    flip = rng.random(30) < 0.25
    c[flip] = 1 - c[flip]
    return c, b


def test_relative_claims_decide_on_the_linear_contrast():
    c, b = _contrast_case()
    e = paired_effect(c, b, relative=True)
    lin = c - 1.05 * b
    lin_lo = lin.mean() - st.t.ppf(0.975, 29) * lin.std(ddof=1) / math.sqrt(30)
    assert lin_lo > 0  # the contrast's t interval lies above 0: the ratio is >= 1.05
    con = relative_contrast(e, 0.05)
    assert con.ci[0] == pytest.approx(0.05 + lin_lo / b.mean())
    assert con.sd == pytest.approx(lin.std(ddof=1) / b.mean())
    v = decide(e, ">=", 0.05, CI)
    assert v.verdict == "supported" and "linear contrast" in v.reason
    # the delta method's interval around the estimate does not decide the same pairs
    assert decide(paired_effect(c, b, relative=True, interval="delta"), ">=", 0.05, CI).verdict == "inconclusive"
    # Fieller's interval (the row's) and the contrast agree on the side of the threshold
    assert e.ci[0] > 0.05


def test_relative_contrast_under_betting_and_its_ratio_interval_agree():
    c, b = _contrast_case()
    e = paired_effect(c, b, relative=True, interval="betting")
    lo, hi = betting_interval(c - 1.05 * b, -1.05, 1.0)
    con = relative_contrast(e, 0.05)
    assert con.ci == pytest.approx((0.05 + lo / b.mean(), 0.05 + hi / b.mean()))
    for theta in (e.ci[0] - 0.01, e.ci[0] + 0.01, e.ci[1] - 0.01, e.ci[1] + 0.01):  # inside ⇔ the contrast holds 0
        lo, hi = betting_interval(c - (1 + theta) * b, -(1 + theta), 1.0)
        assert (lo <= 0 <= hi) == (e.ci[0] <= theta <= e.ci[1])


def test_the_error_gate_at_an_interim_look_needs_the_clopper_pearson_bound():
    e = paired_effect(np.full(10, 0.6), np.full(10, 0.5) + np.linspace(-0.1, 0.1, 10), bounds=None)
    # 3 of 10 failed: 30% > 10%, but the one-sided 97.5% lower bound is 0.0667: an interim look goes on
    assert decide(e, ">=", 0.0, CI, error_rate=0.3, interim=True).verdict != "error"
    assert decide(e, ">=", 0.0, CI, error_rate=0.3).verdict == "error"
    # 5 of 10: lower bound 0.187 > 10%: the failures decide even at an interim look
    v = decide(e, ">=", 0.0, CI, error_rate=0.5, interim=True)
    assert v.verdict == "error" and "Clopper-Pearson" in v.reason


def test_query_order_is_a_seeded_permutation_of_the_natural_order():
    ids = [f"q{i}" for i in (10, 2, 1, 33, 4, 21)]
    assert ordered(ids, "natural", 13) == sorted(ids, key=natural_key) == ["q1", "q2", "q4", "q10", "q21", "q33"]
    r13 = ordered(ids, "random", 13)
    assert sorted(r13, key=natural_key) == ordered(ids, "natural", 13)
    assert r13 == ordered(list(reversed(ids)), "random", 13)  # the file's order does not matter, only the ids
    perm = np.random.default_rng(13).permutation(6)
    assert r13 == [ordered(ids, "natural", 0)[i] for i in perm]
    assert ordered(ids, "natural", 13, key=None) == ids  # key=None keeps the file's order
    with pytest.raises(ValueError, match="query order"):
        ordered(ids, "shuffled", 1)


def test_an_anytime_design_measures_every_look_with_the_betting_sequence():
    c = np.tile([0.9, 0.8, 0.85], 10)
    b = np.tile([0.1, 0.2, 0.0], 10)
    design = SequentialDesign((10, 20, 30), boundary="anytime")
    assert design.confidences == [0.95, 0.95, 0.95] and "anytime" in design.describe()
    seen = []

    def effect_at(n, conf):
        e = paired_effect(c[:n], b[:n], confidence=conf)
        seen.append((e.interval_method, e.confidence))
        return e

    out = run_sequential(design, effect_at, lambda e, final: decide(e, ">", 0.0, CI, interim=not final))
    assert out.verdict.verdict == "supported" and seen == [("betting", 0.95)]
    assert out.effect.ci == pytest.approx(betting_interval(c[:10] - b[:10], -1.0, 1.0))
    with pytest.raises(ValueError, match="anytime-valid"):
        run_sequential(design, lambda n, conf: paired_effect(c[:n], b[:n], bounds=None, confidence=conf),
                       lambda e, final: decide(e, ">", 0.0, CI))
    # outside an anytime design the defaults are unchanged
    assert paired_effect(c, b).interval_method == "t" and proportion_effect([True, False]).interval_method == "wilson"
    with anytime_intervals():
        p = proportion_effect([True] * 9 + [False])
    assert p.interval_method == "betting" and p.ci == pytest.approx(betting_interval([1.0] * 9 + [0.0], 0, 1))
