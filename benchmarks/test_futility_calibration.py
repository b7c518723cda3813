"""Non-binding futility (issue #37 item 1) calibrated through the production path (`run_sequential` on the anytime
design, `harness.stats.calibration_futility`): claims drawn from real per-query scores, decided with and without
futility. With the truth at the threshold, each side's error stays within the per-side band and futility adds no
decision; with the truth one 30-query MDE past it, futility costs at most 0.03 of power; the queries it saves are
recorded. Populations: the recorded dense/BM25/hybrid runs on Cranfield (225 topics) and halueval-qa (600 questions),
`fixtures/calibration/per_query_scores.json`: a mean difference of nDCG@10, a paired accuracy, a rate. `pytest -m benchmark benchmarks/test_futility_calibration.py`."""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from harness.stats import calibration_sides as sides
from harness.stats.calibration_futility import futility_study

pytestmark = [pytest.mark.benchmark, pytest.mark.selfcheck]  # the harness checking itself
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
LOOKS = (10, 20, 30)
SIMS = 500  # per population at the threshold: MC SE of a 0.025 rate 0.0070 (the band: 0.025 + 2 SEs = 0.039)
POWER_SIMS = 300
SEED = 37


def _populations() -> list[tuple[sides.Population, str, float]]:
    sets = json.loads((FIXTURES / "calibration" / "per_query_scores.json").read_text())["sets"]
    cr, hq = ({k: np.asarray(v, float) for k, v in sets[s].items()} for s in ("cranfield", "halueval-qa"))
    P = sides.Population
    out = [
        (P("cranfield nDCG@10 hybrid - dense", "difference", cr["hybrid:nDCG@10"], cr["dense:nDCG@10"]), ">", 0.0),
        (P("halueval-qa nDCG@10 bm25 - dense", "difference", hq["bm25:nDCG@10"], hq["dense:nDCG@10"]), ">=", 0.05),
        (P("halueval-qa Hit@10 hybrid - dense", "binary", hq["hybrid:Recall@10"], hq["dense:Recall@10"]), ">=", 0.05),
        (P("cranfield hybrid Recall@10>=0.5 (rate)", "proportion", (cr["hybrid:Recall@10"] >= 0.5) * 1.0), ">=", 0.5),
    ]
    # relative claims are left out: they decide on the linear contrast, a difference of bounded values, as the
    # difference rows do (left out when their row's ratio interval cost about 0.16 s a look; about 2 ms since #39)
    return out


@pytest.fixture(scope="module")
def at_threshold() -> list:
    """Each population with its truth exactly at the threshold (a control's child computes only what it checks)."""
    return [futility_study(pop, comp, thr, LOOKS, thr, SIMS, SEED + k) for k, (pop, comp, thr) in
            enumerate(_populations())]


@pytest.fixture(scope="module")
def one_mde_past() -> list:
    """Each population with its truth one fixed-30 MDE on the claim's side of the threshold, where reachable."""
    out = []
    for k, (pop, comp, thr) in enumerate(_populations()):
        shift = sides.mde(pop, thr, LOOKS[-1]) * (1 if comp in (">", ">=") else -1)
        try:
            out.append(futility_study(pop, comp, thr, LOOKS, thr + shift, POWER_SIMS, SEED + 100 + k))
        except ValueError:  # one MDE past the threshold lies outside what the population's values can reach
            continue
    return out


@pytest.mark.spec("CALIB-FUTILITY-SIDES-N30")
def test_futility_keeps_each_side_and_adds_no_decision(at_threshold, rag_check, rag_measure):
    at = at_threshold
    worst = max(max(r.supported[0], r.refuted[0]) for r in at)
    added = sum(r.added_decisions for r in at)
    rag_measure("futility_queries_saved_at_threshold", float(np.mean([r.queries[1] - r.queries[0] for r in at])),
                unit="queries per claim", looks=list(LOOKS))
    rag_measure("futility_futile_share_at_threshold", float(np.mean([r.futile for r in at])), looks=list(LOOKS))
    rag_check("CALIB-FUTILITY-SIDES-N30", worst if added == 0 else math.inf, n=SIMS, sims=SIMS, looks=list(LOOKS),
              added_decisions=added, studies=[r.as_context() for r in at])


@pytest.mark.spec("CALIB-FUTILITY-POWER-N30")
def test_futility_costs_little_power(one_mde_past, rag_check):
    power = one_mde_past
    assert power, "no population could be moved one MDE past its threshold"
    lost = [r.supported[1] - r.supported[0] for r in power]
    rag_check("CALIB-FUTILITY-POWER-N30", max(lost), n=POWER_SIMS, sims=POWER_SIMS, looks=list(LOOKS),
              power=[{"population": r.population, "with": round(r.supported[0], 4),
                      "without": round(r.supported[1], 4)} for r in power],
              studies=[r.as_context() for r in power])
