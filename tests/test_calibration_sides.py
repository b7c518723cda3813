"""The per-side calibration's pieces (issue 36) against values by hand and scipy: the tilting, the shape figures,
the Johnson-Hall interval, the error gate's rates and its copy of `decide`'s gate, and a study's bookkeeping. That
its vectorised verdicts equal the production path: tests/test_calibration_sides_equal.py."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as st

from harness.stats import _sides_rules as rules
from harness.stats import calibration_sides as sides
from harness.stats._effect import paired_effect
from harness.stats._verdict import Decision, decide

pytestmark = pytest.mark.unit
LOOKS = (10, 20, 30)


def test_tilting_sets_the_truth_and_keeps_the_values():
    x = np.array([-1.0, 0.0, 0.0, 0.0, 0.5, 1.0])
    w = sides.tilt(x, 0.3)
    assert float(np.dot(w, x)) == pytest.approx(0.3, abs=1e-12)
    # exponential tilting: log-weights are linear in the value (equal values, equal weights)
    lw = np.log(w)
    assert lw[1] == lw[2] == lw[3] and (lw[5] - lw[4]) / 0.5 == pytest.approx((lw[4] - lw[1]) / 0.5)
    with pytest.raises(ValueError, match="inside"):
        sides.tilt(x, 1.0)
    pop = sides.Population("p", "relative", np.array([0.5, 0.6, 0.2, 0.9]), np.array([0.5, 0.4, 0.3, 0.6]))
    assert pop.effect(sides.truth_weights(pop, 0.05)) == pytest.approx(0.05, abs=1e-12)
    assert pop.effect() == pytest.approx(2.2 / 1.8 - 1)


def test_shape_by_hand():
    # 0/1 outcomes tilted to a rate of 0.8: Bernoulli(0.8), skewness (1 - 2p)/sqrt(p(1 - p)) = -1.5
    pop = sides.Population("rate", "proportion", np.array([1.0, 0.0, 1.0, 1.0]))
    s = sides.shape(pop, 0.8)
    assert s["skewness"] == pytest.approx(-1.5) and s["tie_share"] == pytest.approx(0.8)
    assert s["real_tie_share"] == 0.75 and s["real_skewness"] == pytest.approx(st.skew([1.0, 0.0, 1.0, 1.0]))
    pair = sides.Population("d", "difference", np.array([0.5, 0.7, 0.2, 0.9]), np.array([0.5, 0.4, 0.2, 0.6]))
    assert sides.shape(pair, 0.1)["real_tie_share"] == 0.5


def test_hall_interval_by_hand():
    """Johnson-Hall at n = 8 for one sample: g(T) = T + a + 2a·T² + (4/3)a²·T³, a = γ/(6√n), inverted at ±q."""
    x = np.array([0.0, 0.0, 0.0, 0.1, 0.2, 0.0, 0.9, 0.3])
    lo, hi = rules._hall(x[None, :], 0.95)
    n, m, s = 8, x.mean(), x.std(ddof=1)
    g = st.skew(x)  # m3 / m2^1.5, biased moments
    a, q = g / (6 * math.sqrt(n)), st.t.ppf(0.975, n - 1)

    def gfun(t):
        return t + a + 2 * a * t * t + (4 / 3) * a * a * t ** 3

    for bound, target in ((lo[0], q), (hi[0], -q)):  # T = √n(m − μ)/s at the bound solves g(T) = ±q
        assert gfun(math.sqrt(n) * (m - bound) / s) == pytest.approx(target, abs=1e-9)
    t_lo, t_hi = st.t.interval(0.95, n - 1, loc=m, scale=s / math.sqrt(n))
    assert hi[0] > t_hi and lo[0] > t_lo  # right skew: the interval moves right


def test_error_gate_rates_by_hand_and_by_scipy():
    # one look: the gate's rate is P(X > 3 | n = 30, p = 0.05), the binomial tail, whichever rule
    assert sides.fixed_n_error_rate(0.05, 30) == pytest.approx(st.binom.sf(3, 30, 0.05))
    one = sides.error_gate_rate(0.05, (30,), sims=40000, seed=1)
    assert abs(one - st.binom.sf(3, 30, 0.05)) < 4 * math.sqrt(0.06 * 0.94 / 40000)
    # three looks: peeking adds false errors; the Clopper-Pearson bound at interim looks takes them back
    every = sides.error_gate_rate(0.05, LOOKS, every_look=True, sims=40000, seed=1)
    gated = sides.error_gate_rate(0.05, LOOKS, sims=40000, seed=1)
    assert every > 0.12 and gated < st.binom.sf(3, 30, 0.05) + 4 * math.sqrt(0.06 * 0.94 / 40000)


def test_the_gate_copy_equals_decide_on_recorded_rows():
    """The vectorised gate (CP lower bound at interim looks) against `decide`'s error verdict on 1,000 rows."""
    rng = np.random.default_rng(5)
    e = paired_effect(np.full(20, 0.6), np.linspace(0.4, 0.6, 20), bounds=None)
    for errors in rng.integers(0, 9, 1000):
        for interim in (True, False):
            v = decide(e, ">=", 0.0, Decision("ci"), error_rate=errors / 20, interim=interim).verdict
            lower = st.beta.ppf(0.025, errors, 20 - errors + 1) if errors else 0.0
            expect = errors / 20 > 0.1 and (not interim or lower > 0.1)
            assert (v == "error") == expect


def test_a_side_study_counts_each_side_and_the_stop():
    pop = sides.Population("d", "difference", np.array([0.0, 0.2, 0.4, 0.9, 0.1]), np.array([0.1, 0.1, 0.3, 0.2, 0.1]))
    r = sides.side_study(pop, LOOKS, 0.05, rule="before", sims=400, seed=3)
    assert len(r.supported) == len(r.refuted) == 3 and r.truth == r.threshold == 0.05
    assert 0 <= r.false_supported <= 1 and 0 <= r.coverage <= 1 and 10 <= r.mean_queries <= 30
    far = sides.side_study(pop, LOOKS, 0.05, rule="before", truth=0.3, sims=400, seed=3)
    assert far.false_supported > 0.5 and math.isnan(far.coverage)  # a true effect far above: mostly supported
    assert sides.side_se(4000) == pytest.approx(math.sqrt(0.025 * 0.975 / 4000))
    with pytest.raises(KeyError):
        sides.rule_of("hall", "proportion")
