"""The run's wall-time budget (issue #37, `harness.budget`) calibrated through the production path
(`harness.stats.calibration_allocation`): 2,000 simulated runs of 42 claims drawn from real per-query scores, a third
with the truth at the threshold, a third one 30-query MDE either side, a third three MDEs either side, each claim
decided by `run_sequential` (anytime design, looks 10/20/30, futility) and its queries paid for at the real seconds
per query of the protocol's LLM claims; the budget half of what the run spends without one. The allocator keeps each
side's error and the coverage of the interval a claim stops with, costs at most 0.03 of power on the claims it
starts, decides at least as many claims as round-robin on the same data, and never overruns the budget
when its estimates are the true costs (the overrun with the estimates production makes is recorded). Populations:
`fixtures/calibration/per_query_scores.json` (as the futility calibration); costs: `harness/budget_prior.json` over
the queries each claim drew, `fixtures/calibration/claim_costs.json`.
`pytest -m benchmark benchmarks/test_allocator_calibration.py`."""
from __future__ import annotations

import json
import math
import time
from pathlib import Path

import numpy as np
import pytest

from harness.stats import allocation_figures as fig
from harness.stats import calibration_allocation as ca
from harness.stats import calibration_sides as sides

pytestmark = [pytest.mark.benchmark, pytest.mark.selfcheck]  # the harness checking itself
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "calibration"
RUNS = 2000
SEED = 37
MIN_CLAIMS = 20_000  # started claims per truth category the bands below are computed at
SIDE_BAND = sides.NOMINAL_SIDE + 2 * sides.side_se(MIN_CLAIMS)  # 0.0272
MIN_CELL = 2_000  # started claims per population, truth and side the coverage band is computed at
CELL_BAND = 0.95 - 2 * math.sqrt(0.95 * 0.05 / MIN_CELL)  # 0.9403


def _populations() -> list[tuple[sides.Population, str, float]]:
    """The futility calibration's four real populations (relative claims left out: their ratio interval is searched
    on a grid, too slow for 84,000 claims)."""
    sets = json.loads((FIXTURES / "per_query_scores.json").read_text())["sets"]
    cr, hq = ({k: np.asarray(v, float) for k, v in sets[s].items()} for s in ("cranfield", "halueval-qa"))
    P = sides.Population
    return [
        (P("cranfield nDCG@10 hybrid - dense", "difference", cr["hybrid:nDCG@10"], cr["dense:nDCG@10"]), ">", 0.0),
        (P("halueval-qa nDCG@10 bm25 - dense", "difference", hq["bm25:nDCG@10"], hq["dense:nDCG@10"]), ">=", 0.05),
        (P("halueval-qa Hit@10 hybrid - dense", "binary", hq["hybrid:Recall@10"], hq["dense:Recall@10"]), ">=", 0.05),
        (P("cranfield hybrid Recall@10>=0.5 (rate)", "proportion", (cr["hybrid:Recall@10"] >= 0.5) * 1.0), ">=", 0.5),
    ]


def _claims() -> tuple[list, ca.Claims, dict]:
    costs = json.loads((FIXTURES / "claim_costs.json").read_text())
    profiles = ca.cost_profiles(costs["book_s"], costs["queries_used"])  # c43bb45's book, frozen with its queries
    pops = _populations()
    claims = ca.draw_claims(pops, profiles, RUNS, SEED, jitter=costs["per_query_log_sd"])
    return pops, claims, {"profiles": [{"nodeid": p.nodeid, "book_s": round(p.book_s, 2), "queries": p.queries}
                                       for p in profiles], "per_query_log_sd": costs["per_query_log_sd"]}


@pytest.fixture(scope="module")
def estimated() -> tuple[ca.Study, dict]:
    """The runs with the estimates production makes (a run under a control computes only what its spec reads)."""
    t0 = time.perf_counter()
    pops, claims, ctx = _claims()
    study = ca.Study(claims, pops)
    return study, {**ctx, "wall_s": round(time.perf_counter() - t0, 1)}


@pytest.fixture(scope="module")
def true_costs() -> tuple[ca.Study, float]:
    """The same runs with every step's estimate its true cost."""
    t0 = time.perf_counter()
    pops, claims, _ = _claims()
    return ca.Study(claims, pops, true_costs=True), round(time.perf_counter() - t0, 1)


def _arms(study: ca.Study) -> list[ca.Allocation]:
    return [study.none, study.allocator, study.round_robin]


@pytest.mark.spec("CALIB-ALLOCATOR-SIDES")
def test_the_allocator_keeps_each_side(estimated, rag_check):
    study, ctx = estimated
    cat = study.claims.category
    rows = {a.name: dict(zip(("false_supported", "false_refuted", "claims"), fig.side_errors(a.code, cat)))
            for a in _arms(study)}
    fs, fr, n = fig.side_errors(study.allocator.code, cat)
    rag_check("CALIB-ALLOCATOR-SIDES", max(fs, fr) if n >= MIN_CLAIMS else math.inf, n=n, runs=RUNS,
              band=round(SIDE_BAND, 4), rule=study.budget_looks.rule.name, arms=rows, **ctx)


@pytest.mark.spec("CALIB-ALLOCATOR-COVERAGE")
def test_the_stopping_interval_covers_the_truth_under_the_allocator(estimated, rag_check):
    study, ctx = estimated
    c, pops = study.claims, study.pops
    cells = {a.name: fig.coverage_cells(a.code, a.lo, a.hi, c.truth, c.population, c.category, c.side)
             for a in _arms(study)}
    mine = cells["allocator"]
    n = min(k for _, k in mine.values())
    worst = min(v for v, _ in mine.values()) if n >= MIN_CELL else -math.inf
    # beside it, not judged: coverage among the claims stopped undecided before their last look, which the anytime
    # interval does not promise (the stop is chosen by the data: without a budget, a far claim stopped futile had an
    # estimate near the threshold)
    K = len(study.budget_looks.rule.looks)
    early = {a.name: _rows(fig.coverage(a.code, a.lo, a.hi, c.truth, c.category,
                                       among=fig.stopped_early(a.code, a.looks, K if a is study.allocator else 3)))
             for a in _arms(study)}
    rag_check("CALIB-ALLOCATOR-COVERAGE", worst, n=n, runs=RUNS, band=round(CELL_BAND, 4),
              cells={name: [{"population": pops[p][0].name, "truth": ca.CATEGORIES[k], "side": sd,
                             "coverage": round(v, 4), "claims": m} for (p, k, sd), (v, m) in r.items()]
                     for name, r in cells.items()},
              started={a.name: _rows(fig.coverage(a.code, a.lo, a.hi, c.truth, c.category)) for a in _arms(study)},
              stopped_early=early, **ctx)


@pytest.mark.spec("CALIB-FUTILITY-COVERAGE")
def test_the_interval_a_claim_stops_with_covers_the_truth_under_futility(estimated, rag_check):
    """Futility alone (no budget): every claim decided, run to its last look, or stopped futile, reporting what
    production reports (`SequentialOutcome.reported_effect`); judged per population, truth and side."""
    study, ctx = estimated
    c, pops, none = study.claims, study.pops, study.none
    cells = fig.coverage_cells(none.code, none.lo, none.hi, c.truth, c.population, c.category, c.side)
    n = min(k for _, k in cells.values())
    worst = min(v for v, _ in cells.values()) if n >= MIN_CELL else -math.inf
    futile = fig.stopped_early(none.code, none.looks, len(study.looks.rule.looks))  # no budget: futile stops only
    rag_check("CALIB-FUTILITY-COVERAGE", worst, n=n, runs=RUNS, band=round(CELL_BAND, 4),
              cells=[{"population": pops[p][0].name, "truth": ca.CATEGORIES[k], "side": sd, "coverage": round(v, 4),
                      "claims": m} for (p, k, sd), (v, m) in cells.items()],
              futile_share=round(float(futile.mean()), 4),
              stopped_futile=_rows(fig.coverage(none.code, none.lo, none.hi, c.truth, c.category, among=futile)),
              **ctx)


def _rows(cov: dict[str, tuple[float, int]]) -> dict[str, dict[str, float]]:
    return {cat: {"coverage": round(v, 4), "claims": n} for cat, (v, n) in cov.items()}


@pytest.mark.spec("CALIB-ALLOCATOR-POWER")
def test_the_allocator_costs_little_power(estimated, rag_check):
    study, ctx = estimated
    c = study.claims
    rows = {a.name: dict(zip(("loss", "power_without", "power_with", "claims"),
                             fig.power_loss(study.none.code, a.code, c.category, c.side)))
            for a in (study.allocator, study.round_robin)}
    loss, _, _, n = fig.power_loss(study.none.code, study.allocator.code, c.category, c.side)
    rag_check("CALIB-ALLOCATOR-POWER", loss, n=n, runs=RUNS, arms=rows, **ctx)


@pytest.mark.spec("CALIB-ALLOCATOR-VS-ROUND-ROBIN")
def test_the_allocator_decides_at_least_as_many_as_round_robin(estimated, rag_check, rag_measure):
    study, ctx = estimated
    runs = study.claims.runs
    per_run = {a.name: fig.decided_per_run(a.code, runs) for a in _arms(study)}
    diff = per_run["allocator"] - per_run["round-robin"]
    rag_measure("allocator_calibration_wall_s", ctx["wall_s"], unit="s", runs=runs)
    for name, d in per_run.items():
        rag_measure(f"decided_claims_per_run_{name.replace(' ', '_').replace('-', '_')}", float(d.mean()),
                    unit="claims of 42", runs=runs)
    rag_check("CALIB-ALLOCATOR-VS-ROUND-ROBIN", float(diff.mean()), n=runs, runs=runs,
              decided_total={k: int(v.sum()) for k, v in per_run.items()},
              runs_allocator_ahead=int((diff > 0).sum()), runs_round_robin_ahead=int((diff < 0).sum()), **ctx)


@pytest.mark.spec("CALIB-ALLOCATOR-NO-OVERRUN")
def test_the_allocator_never_overruns_given_true_costs(true_costs, estimated, rag_check, rag_measure):
    """Given each step's true cost the allocator never spends past the budget; with the estimates production makes
    (a claim's book cost, then its measured seconds per query) it can, by what a step costs over 1.15 times its
    estimate: recorded, not judged."""
    study, wall_s = true_costs
    guessed, ctx = estimated
    for a in (guessed.allocator, guessed.round_robin):
        over = fig.overrun(a.spent, a.limit)
        name = a.name.replace("-", "_")
        rag_measure(f"{name}_runs_over_budget_estimated_costs", float(np.mean(over > 0)), runs=len(over),
                    per_query_log_sd=ctx["per_query_log_sd"])
        rag_measure(f"{name}_max_overrun_share_of_budget_estimated_costs", float(np.max(over / a.limit)),
                    runs=len(over))
        rag_measure(f"{name}_max_overrun_s_estimated_costs", float(np.max(over)), unit="s", runs=len(over))
    over = fig.overrun(study.allocator.spent, study.allocator.limit)
    rr = fig.overrun(study.round_robin.spent, study.round_robin.limit)
    rag_check("CALIB-ALLOCATOR-NO-OVERRUN", float(over.max()), n=len(over), runs=len(over), wall_s=wall_s,
              runs_over=int((over > 0).sum()), mean_left_s=round(float(-over.mean()), 2),
              round_robin_max_overrun_s=round(float(rr.max()), 3))
