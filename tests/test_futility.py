"""harness.stats.futility: the predictive probability of a decision by the last look, checked against a direct
simulation of the queries still to come (per query, not through the closed form's variance), and by hand."""
from __future__ import annotations

import math

import numpy as np
import pytest

from harness.stats.futility import decision_probability, is_futile, per_query_spread

pytestmark = pytest.mark.unit


def _brute(estimate, spread, n_k, looks, threshold, draws=200_000, seed=7):
    """Each draw: a mean from the flat prior's posterior, then every later query one by one (normal around it),
    the running mean checked at each look against threshold +- z * spread / sqrt(n)."""
    rng = np.random.default_rng(seed)
    theta = rng.normal(estimate, spread / math.sqrt(n_k), draws)
    total = np.full(draws, estimate * n_k)
    decided = np.zeros(draws, bool)
    prev = n_k
    for n, z in looks:
        for _ in range(n - prev):
            total += rng.normal(theta, spread)
        decided |= np.abs(total / n - threshold) > z * spread / math.sqrt(n)
        prev = n
    return decided.mean()


def test_the_spread_is_read_off_the_interval():
    # se 0.01 at 95% (z = 1.959964) over 10 queries: per-query sd 0.01 * sqrt(10) = 0.0316228
    assert per_query_spread((0.02 - 0.0195996, 0.02 + 0.0195996), 10, 0.95) == pytest.approx(0.0316228, rel=1e-5)
    assert math.isnan(per_query_spread((-1.0, 1.0), 10, 1.0))  # a look that spends nothing says nothing


def test_one_remaining_look_matches_a_direct_simulation():
    est, spread, n_k = 0.02, 0.01 * math.sqrt(10), 10
    ci = (est - 1.959964 * 0.01, est + 1.959964 * 0.01)
    got = decision_probability(est, ci, n_k, 0.95, [(30, 0.95)], 0.0)
    want = _brute(est, spread, n_k, [(30, 1.959964)], 0.0)
    assert got == pytest.approx(want, abs=3 * math.sqrt(want * (1 - want) / 200_000) + 1e-4)
    # by hand: final mean ~ N(0.02, 0.0316228^2 * 20 / 300) = N(0.02, 0.0081650^2); decides beyond +-0.0113160:
    # sf((0.011316 - 0.02) / 0.008165) + cdf((-0.011316 - 0.02) / 0.008165) = 0.85623 + 0.0000628
    assert got == pytest.approx(0.85630, abs=2e-4)


def test_several_remaining_looks_match_a_direct_simulation():
    est, se, n_k = 0.004, 0.01, 10
    ci = (est - 2.5 * se, est + 2.5 * se)
    conf = 1 - 2 * 0.0062097  # the confidence whose z is 2.5
    later = [(20, 0.99), (30, 0.97)]
    got = decision_probability(est, ci, n_k, conf, later, 0.0, draws=200_000, seed=3)
    spread = per_query_spread(ci, n_k, conf)
    want = _brute(est, spread, n_k, [(20, 2.575829), (30, 2.170090)], 0.0)
    assert got == pytest.approx(want, abs=4 * math.sqrt(want * (1 - want) / 200_000) + 1e-4)
    assert 0.0 < got < 1.0


def test_an_estimate_far_from_the_threshold_is_not_futile_and_one_at_it_with_a_tight_interval_is():
    assert not is_futile(decision_probability(0.05, (0.0, 0.10), 10, 0.95, [(30, 0.95)], 0.0))
    # the estimate sits on the threshold with a tight interval: the remaining queries cannot move it far enough
    p = decision_probability(0.0, (-0.001, 0.001), 20, 0.95, [(30, 0.95)], 0.0)
    assert p < 0.10 and is_futile(p)
    assert not is_futile(math.nan)


def test_later_looks_must_come_later():
    with pytest.raises(ValueError):
        decision_probability(0.0, (-1.0, 1.0), 10, 0.95, [(10, 0.95)], 0.0)
    with pytest.raises(ValueError):
        decision_probability(0.0, (-1.0, 1.0), 10, 0.95, [(30, 0.95), (20, 0.95)], 0.0)


def _run(c, b, futility, boundary="anytime", threshold=0.0):
    from harness.stats import paired_effect
    from harness.stats._verdict import Decision, decide
    from harness.stats.sequential import SequentialDesign, run_sequential

    design = SequentialDesign((10, 20, 30), boundary=boundary)

    def effect_at(n, conf):
        return paired_effect(c[:n], b[:n], bounds=(0.0, 1.0), seed=1, confidence=conf)

    return run_sequential(design, effect_at, lambda e, final: decide(e, ">=", threshold, Decision("ci"), interim=not final),
                          futility_threshold=threshold if futility else None)


def test_a_claim_its_last_look_cannot_decide_stops_futile_and_reads_inconclusive():
    rng = np.random.default_rng(0)
    b = rng.uniform(0.3, 0.7, 30)
    c = b + rng.normal(0.0, 0.01, 30)  # a technique that changes almost nothing: the interval sits on the threshold
    with_f, without = _run(c, b, True), _run(c, b, False)
    assert without.verdict.verdict == "inconclusive" and without.stopped_at == 3
    assert with_f.futile and with_f.stopped_at < 3 and with_f.verdict.verdict == "inconclusive"
    assert with_f.futile_probability < 0.10
    ctx = with_f.as_context()
    assert ctx["stopped"] == f"futile at look {with_f.stopped_at}" and ctx["queries_used"] < 30


@pytest.mark.parametrize("boundary", ["anytime", "rci"])
def test_futility_is_non_binding_path_by_path(boundary):
    """On 150 seeded paths with effects from none to large: a verdict with futility is the one without it, or an
    earlier inconclusive; never a decision the path without futility did not reach."""
    rng = np.random.default_rng(1)
    futile = 0
    for i in range(150):
        b = rng.uniform(0.2, 0.8, 30)
        c = np.clip(b + rng.normal(rng.choice([0.0, 0.02, 0.05, 0.1, -0.05]), 0.08, 30), 0, 1)
        f, nf = _run(c, b, True, boundary), _run(c, b, False, boundary)
        if f.futile:
            futile += 1
            assert f.verdict.verdict == "inconclusive" and f.stopped_at < nf.stopped_at, i
            assert [lk.verdict for lk in f.looks] == [lk.verdict for lk in nf.looks[:f.stopped_at]], i
        else:
            assert (f.verdict.verdict, f.stopped_at) == (nf.verdict.verdict, nf.stopped_at), i
    assert futile > 0  # the rule did stop some paths, so the property was exercised
