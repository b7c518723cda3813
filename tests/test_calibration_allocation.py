"""The allocator's calibration (`harness.stats.calibration_allocation`): its copy of futility's prediction equals
`futility.decision_probability`, its claims replayed through `run_sequential` read what the production path reads
(`paired_effect` / `proportion_effect` -> `decide` -> futility), the three allocations on a run worked by hand, and
the figures on outcomes counted by hand."""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from harness.stats import _allocation_claims as ac
from harness.stats import allocation_figures as fig
from harness.stats import calibration_allocation as ca
from harness.stats import calibration_sides as sides
from harness.stats import futility
from harness.stats._effect import Effect, anytime_intervals, paired_effect, proportion_effect
from harness.stats._verdict import Decision, Verdict, decide
from harness.stats.sequential import SequentialDesign, run_sequential

pytestmark = pytest.mark.unit
RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "calibration" / "per_query_scores.json"
S, R, I_, B, N = ca.SUPPORTED, ca.REFUTED, ca.INCONCLUSIVE, ca.BUDGET, ca.NOT_STARTED


def _pops() -> list[tuple[sides.Population, str, float]]:
    sets = json.loads(RECORDED.read_text())["sets"]
    cr, hq = ({k: np.asarray(v, float) for k, v in sets[s].items()} for s in ("cranfield", "halueval-qa"))
    P = sides.Population
    return [(P("cr nDCG hybrid-dense", "difference", cr["hybrid:nDCG@10"], cr["dense:nDCG@10"]), ">", 0.0),
            (P("hq hit hybrid-dense", "binary", hq["hybrid:Recall@10"], hq["dense:Recall@10"]), ">=", 0.05),
            (P("cr recall>=.5 rate", "proportion", (cr["hybrid:Recall@10"] >= 0.5) * 1.0), ">=", 0.5)]


# ---------------------------------------------------------------- futility's prediction, many claims at once
@pytest.mark.parametrize("n_k, later", [(10, [(20, 0.95), (30, 0.95)]), (20, [(30, 0.95)]),
                                        (10, [(20, 1.0), (30, 0.95)]), (5, [(10, 0.9), (20, 0.95), (40, 0.99)])])
def test_decision_probabilities_equal_futility_claim_by_claim(n_k, later):
    rng = np.random.default_rng(5)
    est = rng.normal(0.05, 0.1, 120)
    lo, hi = est - rng.uniform(0.0, 0.4, 120), est + rng.uniform(0.01, 0.4, 120)
    lo[:3], hi[:3] = est[:3], est[:3]  # every query agreed: a zero spread
    est[1] = 0.05  # ... exactly at the threshold
    lo[3] = -np.inf  # an interval that says nothing
    got = ac.decision_probabilities(est, lo, hi, n_k, 0.95, later, 0.05)
    want = [futility.decision_probability(float(e), (float(a), float(b)), n_k, 0.95, later, 0.05)
            for e, a, b in zip(est, lo, hi)]
    np.testing.assert_array_equal(got, want)


def test_decision_probabilities_refuse_looks_out_of_order():
    with pytest.raises(ValueError, match="later looks must be increasing"):
        ac.decision_probabilities(np.zeros(2), -np.ones(2), np.ones(2), 20, 0.95, [(20, 0.95)], 0.0)


def test_stops_at_reads_the_first_decided_then_futile_look():
    looks = ac.ClaimLooks(ac.ANYTIME, *(np.zeros((4, 3)) for _ in range(3)),
                          np.array([[0, 1, 0], [0, 0, 0], [0, 0, 2], [0, 0, 0]], dtype=np.int8),
                          np.array([[0.5, 0.5, np.nan], [0.05, np.nan, np.nan], [0.5, 0.09, np.nan],
                                    [np.nan, 0.5, np.nan]]), *(np.zeros((4, 3)) for _ in range(2)))
    # decided at look 2; futile at look 1; futile at look 2 (before its refuted look 3); nan never stops
    assert looks.stops_at(futility.FUTILITY_BELOW).tolist() == [1, 0, 1, 2]


# ---------------------------------------------------------------- the replay equals the production path
def _production(pop: sides.Population, comparator: str, threshold: float, a: np.ndarray, b: np.ndarray):
    def effect_at(n: int, confidence: float) -> Effect:
        if pop.kind == "proportion":
            return proportion_effect(a[:n].astype(bool), confidence=confidence)
        return paired_effect(a[:n], b[:n], binary=pop.kind == "binary", bounds=pop.bounds, confidence=confidence,
                             n_resamples=10, seed=1)

    return run_sequential(SequentialDesign((10, 20, 30), boundary="anytime"), effect_at,
                          lambda e, final: decide(e, comparator, threshold, Decision("ci"), interim=not final),
                          futility_threshold=threshold)


def test_the_unbudgeted_replay_reads_what_the_production_path_reads():
    pops = _pops()
    claims = ca.draw_claims(pops, [ca.CostProfile("x", 30.0, 30)], 2, seed=3, jitter=0.3)
    study = ca.Study(claims, pops)
    kinds = set()
    for i in range(len(claims.population)):
        pop, comp, thr = pops[int(claims.population[i])]
        o = _production(pop, comp, thr, claims.A[i], claims.B[i])
        code = {"supported": S, "refuted": R}.get(o.verdict.verdict, I_)
        assert (int(study.none.code[i]), int(study.none.looks[i])) == (code, len(o.looks)), i
        assert (study.none.lo[i], study.none.hi[i]) == pytest.approx(o.effect.ci, abs=1e-9), i
        kinds.add((code, o.futile))
    assert {(I_, True), (I_, False)} <= kinds and ({(S, False), (R, False)} & kinds), kinds


# ---------------------------------------------------------------- one run worked by hand
def _hand_study(per_q=(1.0, 2.0, 1.0), book=(10.0, 20.0, 10.0), verdict=((0, 0, 0), (1, 0, 0), (0, 0, 0)),
                p=((0.5, 0.5, np.nan), (np.nan,) * 3, (0.05, np.nan, np.nan)), **kw) -> ca.Study:
    """One run of claims with constant seconds per query `per_q`, book costs `book`, and per look their verdict
    codes and futility's probability. By default three claims: claim 0 undecided to its last look (1 s a query, book
    10 s), claim 1 supported at its first look (2 s a query, book 20 s), claim 2 futile at its first look (1 s a
    query, book 10 s)."""
    pop = sides.Population("rate", "proportion", np.array([0.0, 1.0]))
    m = len(per_q)
    cum = np.asarray(per_q)[:, None] * np.arange(31)[None, :]
    zeros = np.zeros(m, dtype=np.int64)
    claims = ca.Claims(1, m, zeros, zeros, zeros, np.full(m, 0.5), np.asarray(book), cum, np.zeros((m, 30)),
                       np.full((m, 30), np.nan))
    z = np.zeros((m, 3))
    looks = ac.ClaimLooks(ac.ANYTIME, z, z - 0.1, z + 0.1, np.asarray(verdict, dtype=np.int8), np.asarray(p), z - 0.2,
                          z + 0.2)
    return ca.Study(claims, [(pop, ">=", 0.5)], looks=looks, **kw)


def test_a_run_allocated_by_hand():
    st = _hand_study()
    # unbudgeted: 30 + 20 + 10 s spent; the budget is half of it
    assert st.none.code.tolist() == [I_, S, I_] and st.none.looks.tolist() == [3, 1, 1]
    assert st.none.spent[0] == 60.0 and st.allocator.limit[0] == 30.0
    # allocator: a step is granted where the greedy plan (by chance of a decision per second) of it and the claims
    # not yet started, within what is left over 1.15, takes it. Claim 0 (0.5 per 10 s) admitted: 26.1 s plan it and
    # claim 2 (0.5/10) before claim 1 (0.5/20); its first look costs 10 s. Its look 2 (0.5 over the 20 s to its end)
    # comes after claim 2 and leaves 7.4 of the 17.4 s: refused. Claim 1 (0.5/20) likewise: not started. Claim 2
    # admitted, futile at its first look.
    assert st.allocator.code.tolist() == [B, N, I_] and st.allocator.looks.tolist() == [1, 0, 1]
    assert st.allocator.spent[0] == 20.0
    # round-robin: first looks of claims 0 and 2 (claim 1's 23 s do not fit the 20 s left), then claim 0's look 2
    # needs 11.5 of the 10 s left
    assert st.round_robin.code.tolist() == [B, N, I_] and st.round_robin.looks.tolist() == [1, 0, 1]
    assert st.round_robin.spent[0] == 20.0
    # the reported interval is the stopping look's own
    assert st.allocator.lo.tolist()[0] == -0.1 and math.isnan(st.allocator.lo[1])


def test_a_run_allocated_by_hand_with_a_larger_budget():
    st = _hand_study(budget_share=1.0)  # 60 s
    # allocator: claim 0 takes all three looks (each planned with claim 2's 10 s within what is left over 1.15);
    # claim 1 (20 s) comes after claim 2 (10 s) in the plan for the 26.1 s left: not started; claim 2 admitted,
    # futile at its first look
    assert st.allocator.code.tolist() == [I_, N, I_] and st.allocator.looks.tolist() == [3, 0, 1]
    assert st.allocator.spent[0] == 40.0
    # round-robin: first looks 10 + 20 + 10 s; claim 0's look 2 (11.5 of 20 s) granted, its look 3 (11.5 of 10) not
    assert st.round_robin.code.tolist() == [B, S, I_] and st.round_robin.looks.tolist() == [2, 1, 1]
    assert st.round_robin.spent[0] == 50.0


def test_true_costs_admit_a_claim_at_its_cost_to_where_it_stops():
    st = _hand_study(true_costs=True)
    # planned and admitted at 30, 20 and 10 s with 26.1 s to plan: claim 0 (30 s) never fits, claim 1 (20 s) comes
    # after claim 2 (0.5/10 beats 0.5/20) and does not fit beside it; claim 2 admitted
    assert st.allocator.code.tolist() == [N, N, I_] and st.allocator.spent[0] == 10.0


def test_the_pace_rescales_the_book_as_the_plugin_does():
    from harness.plugin import budget as plugin

    assert (ca.SCALE_AFTER_S, ca.SCALE_RANGE) == (plugin.SCALE_AFTER_S, plugin.SCALE_RANGE)
    # three claims of book 10 s, each supported at its first look: claim 0 costs 30 s (3 s a query), 1 and 2 10 s;
    # 50 s unbudgeted, a budget of 55 s. After claims 0 and 1 (20 book seconds run, 40 s spent) the pace is 2:
    # claim 2 is asked for at 20 s, 23 s with the margin, of the 15 s left: refused (at its book, 11.5 s, it fits)
    st = _hand_study(per_q=(3.0, 1.0, 1.0), book=(10.0, 10.0, 10.0), verdict=((1, 0, 0),) * 3, p=((np.nan,) * 3,) * 3,
                     budget_share=1.1)
    assert st.allocator.limit[0] == pytest.approx(55.0)
    assert st.allocator.code.tolist() == [S, S, N] and st.allocator.spent[0] == 40.0
    # with each step's true cost (claim 0's is 30 s) the pace stays 1: the plan for 47.8 s takes claims 1 and 2
    # (0.5/10 s each) before claim 0 (0.5/30 s), which then does not fit
    st = _hand_study(per_q=(3.0, 1.0, 1.0), book=(10.0, 10.0, 10.0), verdict=((1, 0, 0),) * 3, p=((np.nan,) * 3,) * 3,
                     budget_share=1.1, true_costs=True)
    assert st.allocator.code.tolist() == [N, S, S] and st.allocator.spent[0] == 20.0


# ---------------------------------------------------------------- drawing the runs
def test_draw_claims_composes_each_run_as_asked():
    pops = _pops()
    claims = ca.draw_claims(pops, [ca.CostProfile("a", 20.0, 10), ca.CostProfile("b", 30.0, 30)], 3, seed=1,
                            jitter=0.0)
    assert claims.per_run == 3 * ca.PER_CATEGORY and len(claims.population) == 3 * claims.per_run
    for r in range(3):
        rows = list(claims.rows(r))
        cat, side = claims.category[rows], claims.side[rows]
        assert np.bincount(cat).tolist() == [ca.PER_CATEGORY] * 3
        assert (side[cat == 0] == 0).all() and np.bincount(side[cat > 0] + 1).tolist() == [ca.PER_CATEGORY, 0,
                                                                                           ca.PER_CATEGORY]
    for i in range(len(claims.population)):
        pop, _, thr = pops[int(claims.population[i])]
        k = (0.0, 1.0, ca.FAR_MDES)[int(claims.category[i])] * int(claims.side[i])
        assert claims.truth[i] == pytest.approx(thr + k * sides.mde(pop, thr, 30))
        per_q = {20.0: 2.0, 30.0: 1.0}[float(claims.book_s[i])]  # without jitter: the profile's mean each query
        np.testing.assert_allclose(claims.cum_cost[i], per_q * np.arange(31))
    # the rate's values cannot reach three MDEs from its threshold: no far claim of it
    assert not ((claims.population == 2) & (claims.category == 2)).any()


def test_jitter_keeps_the_mean_cost():
    claims = ca.draw_claims(_pops(), [ca.CostProfile("a", 30.0, 30)], 50, seed=2, jitter=0.966)
    per_query = np.diff(claims.cum_cost, axis=1)
    assert per_query.mean() == pytest.approx(1.0, rel=0.03)  # 63,000 queries: SE 0.5%
    assert np.log(per_query).std() == pytest.approx(0.966, rel=0.02)


def test_cost_profiles_divide_seconds_by_queries():
    (p,) = ca.cost_profiles({"t::a": 50.0, "t::b": 9.0}, {"t::a": 10})
    assert (p.nodeid, p.book_s, p.queries, p.per_query) == ("t::a", 50.0, 10, 5.0)


# ---------------------------------------------------------------- the figures
def test_side_errors_count_started_claims_at_the_threshold():
    code = np.array([S, R, I_, B, N, S, S])
    cat = np.array([0, 0, 0, 0, 0, 1, 2])
    assert fig.side_errors(code, cat) == (0.25, 0.25, 4)
    fs, fr, n = fig.side_errors(np.array([N]), np.array([0]))
    assert math.isnan(fs) and math.isnan(fr) and n == 0


def test_coverage_per_truth_category():
    code = np.array([S, I_, N, B, R, R])
    lo, hi = np.array([0.0, 0.2, 0.0, -1.0, 0.5, -np.inf]), np.array([1.0, 0.4, 1.0, 1.0, 0.6, 0.1])
    truth = np.array([0.5, 0.5, 0.5, 0.3, 0.3, 0.1])
    cat = np.array([0, 0, 0, 1, 1, 2])
    assert fig.coverage(code, lo, hi, truth, cat) == {"threshold": (0.5, 2), "one MDE": (0.5, 2), "far": (1.0, 1)}
    among = np.array([False, True, True, True, False, False])
    cov = fig.coverage(code, lo, hi, truth, cat, among=among)
    assert cov["threshold"] == (0.0, 1) and cov["one MDE"] == (1.0, 1) and math.isnan(cov["far"][0])


def test_coverage_per_population_truth_and_side():
    code = np.array([S, I_, N, B, R, R])
    lo, hi = np.array([0.0, 0.2, 0.0, -1.0, 0.5, -np.inf]), np.array([1.0, 0.4, 1.0, 1.0, 0.6, 0.1])
    truth = np.array([0.5, 0.5, 0.5, 0.3, 0.3, 0.1])
    pop, cat, side = np.array([0, 0, 0, 1, 1, 1]), np.array([0, 0, 0, 1, 1, 2]), np.array([0, 0, 0, 1, 1, -1])
    assert fig.coverage_cells(code, lo, hi, truth, pop, cat, side) == {(0, 0, 0): (0.5, 2), (1, 1, 1): (0.5, 2),
                                                                       (1, 2, -1): (1.0, 1)}


def test_stopped_early_means_refused_a_look_or_futile():
    code = np.array([B, I_, I_, S, N, R])
    looks = np.array([1, 2, 3, 1, 0, 3])
    assert fig.stopped_early(code, looks, 3).tolist() == [True, True, False, False, False, False]


def test_power_loss_on_the_claims_the_budgeted_run_started():
    side = np.array([1, 1, -1, -1, 1, 0])
    cat = np.array([1, 1, 1, 1, 1, 0])
    unbudgeted = np.array([S, S, R, S, S, S])
    budgeted = np.array([S, B, R, I_, N, S])
    # started one-MDE claims 0-3: right without 3 of 4 (claim 3 read supported below the threshold), with 2 of 4
    assert fig.power_loss(unbudgeted, budgeted, cat, side) == (0.25, 0.75, 0.5, 4)
    assert fig.right_verdict(np.array([S, R, R, S, S]), np.array([1, 1, -1, -1, 0])).tolist() == [True, False, True,
                                                                                                  False, False]


def test_decided_per_run_and_overrun():
    assert fig.decided_per_run(np.array([S, R, I_, B, N, S]), 2).tolist() == [2, 1]
    assert fig.overrun(np.array([10.0, 31.5]), np.array([30.0, 30.0])).tolist() == [-20.0, 1.5]


# ---------------------------------------------------------------- run_sequential's stand-in for futility
def test_run_sequential_reads_futility_from_the_stand_in():
    design = SequentialDesign((10, 20, 30), boundary="anytime")
    seen = []

    def effect_at(n: int, confidence: float) -> Effect:
        return Effect("difference", 0.0, (-0.5, 0.5), n, 0.3, interval_method="betting")

    def predict(estimate, ci, n, confidence, later, threshold):
        seen.append((estimate, ci, n, confidence, [m for m, _ in later], threshold))
        return 0.05 if n == 20 else 0.5

    with anytime_intervals():
        out = run_sequential(design, effect_at, lambda e, final: Verdict("inconclusive", ""), futility_threshold=0.1,
                             decision_probability=predict)
    assert out.futile and out.stopped_at == 2 and out.futile_probability == 0.05
    assert seen == [(0.0, (-0.5, 0.5), 10, 0.95, [20, 30], 0.1), (0.0, (-0.5, 0.5), 20, 0.95, [30], 0.1)]
