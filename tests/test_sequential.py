"""Group-sequential boundaries against published tables, the design's looks, and the stopping driver."""
from __future__ import annotations

import numpy as np
import pytest

from harness.stats import calibration as calib
from harness.stats._effect import paired_effect
from harness.stats.sequential import (
    SequentialDesign, constant_shape_boundaries, crossing_probability, run_sequential, spending_boundaries, spent,
)
from harness.stats._verdict import Decision, decide

pytestmark = pytest.mark.unit


# Lan-DeMets spending, two-sided alpha = 0.05 split equally between the tails, equally spaced looks, as
# ldbounds' `bounds(t, iuse=c(1, 1), alpha=c(0.025, 0.025))` and gsDesign's sfLDOF / sfLDPocock print them.
@pytest.mark.parametrize("k, spending, published", [
    (3, "obf", [3.7103, 2.5114, 1.9930]),
    (5, "obf", [4.8769, 3.3569, 2.6803, 2.2898, 2.0310]),
    (5, "pocock", [2.4380, 2.4268, 2.4101, 2.3966, 2.3860]),
])
def test_spending_boundaries_match_published_tables(k, spending, published):
    got = spending_boundaries([(i + 1) / k for i in range(k)], alpha=0.05, spending=spending)
    assert got == pytest.approx(published, abs=2e-4)


# Jennison & Turnbull (2000), Table 2.1 (Pocock's C_P) and Table 2.3 (O'Brien & Fleming's C_B), two-sided 0.05.
@pytest.mark.parametrize("k, pocock, obf", [(2, 2.178, 1.977), (3, 2.289, 2.004), (4, 2.361, 2.024),
                                            (5, 2.413, 2.040)])
def test_classic_constants_match_jennison_turnbull(k, pocock, obf):
    assert constant_shape_boundaries(k, shape="pocock")[0] == pytest.approx(pocock, abs=1e-3)
    assert constant_shape_boundaries(k, shape="obf")[-1] == pytest.approx(obf, abs=1e-3)


def test_crossing_probability_agrees_with_monte_carlo():
    """The recursive integration against direct simulation of the correlated look statistics."""
    t = np.array([0.25, 0.5, 0.75, 1.0])
    bounds = [2.5, 2.4, 2.3, 2.2]  # an arbitrary design, so neither side was tuned to it
    cov = np.sqrt(np.minimum.outer(t, t) / np.maximum.outer(t, t))
    z = np.random.default_rng(28).multivariate_normal(np.zeros(4), cov, size=400_000)
    mc = float(np.mean((np.abs(z) >= bounds).any(axis=1)))
    exact = crossing_probability(bounds, t)
    assert abs(exact - mc) < 4 * np.sqrt(mc * (1 - mc) / len(z))
    assert crossing_probability(spending_boundaries(t), t) == pytest.approx(0.05, abs=1e-9)


def test_spending_functions_by_hand():
    assert spent("obf", 0.05, 1.0) == pytest.approx(0.05)
    assert spent("pocock", 0.05, 1.0) == pytest.approx(0.05)
    assert spent("pocock", 0.05, 0.5) == pytest.approx(0.05 * np.log(1 + (np.e - 1) / 2))
    # 4·(1 − Φ(z_{0.9875}/√0.25)) = 4·(1 − Φ(4.4828)) = 1.474e-5
    assert spent("obf", 0.05, 0.25) == pytest.approx(1.4744e-5, rel=1e-3)
    with pytest.raises(ValueError, match="unknown spending"):
        spent("haybittle", 0.05, 0.5)


@pytest.mark.parametrize("n_max, looks", [(30, (10, 20, 30)), (10, (10,)), (25, (12, 25)), (100, (20, 40, 60, 80, 100)),
                                          (225, (45, 90, 135, 180, 225)), (35, (12, 23, 35))])
def test_plan(n_max, looks):
    assert SequentialDesign.plan(n_max).looks == looks


def test_design_confidences_and_bad_looks():
    d = SequentialDesign((10, 20, 30))
    assert [round(d.confidence_at(k), 4) for k in range(3)] == [0.9998, 0.988, 0.9537]
    assert d.as_context()["bounds"] == [3.7103, 2.5114, 1.993]
    for bad in ((), (20, 10), (1, 5)):
        with pytest.raises(ValueError):
            SequentialDesign(bad)


def _driver(d, spec=(">=", 0.0)):
    comparator, threshold = spec

    def effect_at(n, conf):
        return paired_effect(d[:n], np.zeros(n), bounds=None, confidence=conf)

    return effect_at, lambda e, final: decide(e, comparator, threshold, Decision("ci"), interim=not final)


def test_run_sequential_stops_at_the_first_decided_look():
    big = np.tile([0.9, 1.1], 15)  # decided at the first look: mean 1, sd 0.105
    out = run_sequential(SequentialDesign((10, 20, 30)), *_driver(big), available=30)
    assert out.stopped_at == 1 and out.queries_used == 10 and out.verdict.verdict == "supported"
    lo, hi = out.effect.ci  # the interval is the look's repeated interval, at 99.98%
    assert out.effect.confidence == pytest.approx(0.99979, abs=1e-5)
    from scipy import stats
    half = stats.t.ppf(0.5 + out.effect.confidence / 2, 9) * big[:10].std(ddof=1) / np.sqrt(10)
    assert (lo, hi) == pytest.approx((big[:10].mean() - half, big[:10].mean() + half))
    assert out.as_context()["history"][0]["verdict"] == "supported"


def test_run_sequential_goes_on_until_decided_or_last():
    flat = np.tile([0.3, -0.3], 15)  # mean 0: never decided against 0, all three looks used
    out = run_sequential(SequentialDesign((10, 20, 30)), *_driver(flat))
    assert [lk.n for lk in out.looks] == [10, 20, 30] and out.verdict.verdict == "inconclusive"
    # a value decided only by the fixed-n interval at look 2 is not decided by the repeated one
    d = np.concatenate([np.full(10, 0.1), np.random.default_rng(0).normal(0.12, 0.25, 20)])
    fixed = decide(paired_effect(d[:20], np.zeros(20), bounds=None), ">=", 0.0, Decision("ci")).verdict
    seq = run_sequential(SequentialDesign((10, 20, 30)), *_driver(d))
    assert [lk.verdict for lk in seq.looks][:2] != ["supported"] * 2 or fixed == "supported"


def test_sequential_study_by_hand():
    """Two simulations of three pairs each, looks (2, 3): the first decided at look 1, the second never."""
    D = np.array([[1.0, 1.01, 5.0], [1.0, -1.0, 0.0]])
    r = calib._sequential_study(D, (2, 3), (0.5, 0.95), truth=0.0, threshold=0.0)
    # row 0, look 1 at 50%: mean 1.005, sd 0.00707, t_{0.75,1} = 1 -> [1.0, 1.01] excludes 0: rejected, not covered
    # row 1: look 1 [-1, 1] -> go on; look 2 (last): mean 0 -> covered, not rejected
    assert r.rejection_rate == 0.5 and r.coverage == 0.5 and r.mean_queries == 2.5
    assert r.stopped_share == (0.5, 0.5)


def test_against_fixed_n_on_recorded_scores():
    """A large recorded effect: the sequential rule stops early with the fixed-n verdict; a small one that the
    fixed-30 interval just decides is left undecided by the wider repeated interval (never the opposite verdict)."""
    from harness.stats.sequential import against_fixed_n

    design = SequentialDesign((10, 20, 30))
    big = against_fixed_n(np.tile([0.9, 1.0], 15), np.tile([0.1, 0.0], 15), design, ">", 0.0, Decision("ci"),
                          bounds=None)
    assert big == {"fixed_n": "supported", "sequential": "supported", "stopped_at_look": 1, "queries_used": 10,
                   "queries": 30, "agree": True}
    d = np.tile([0.2, -0.1, 0.15], 10)  # mean 0.0833, sd 0.1299: fixed-30 95% CI [0.035, 0.132]
    near = against_fixed_n(d, np.zeros(30), design, ">", 0.0, Decision("ci"), bounds=None)
    assert near["fixed_n"] == "supported" and near["queries_used"] in (20, 30)
    assert near["agree"] in (True, None)
