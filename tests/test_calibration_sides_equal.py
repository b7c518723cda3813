"""The per-side calibration (issue 36) runs the production path: its vectorised verdicts equal `paired_effect` /
`proportion_effect` → `decide` claim by claim and look by look (1,050 claim-looks per rule: 350 claims × looks at 10,
20 and 30 queries), on claims drawn from recorded real per-query scores (`fixtures/calibration/per_query_scores.json`)
with the truth at the threshold, where a rounding difference would show; the intervals the verdicts read are equal
too."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from harness.stats import _sides_rules as rules
from harness.stats import calibration_sides as sides
from harness.stats._effect import anytime_intervals, paired_effect, proportion_effect, relative_contrast
from harness.stats._verdict import Decision, decide
from harness.stats.sequential import SequentialDesign

pytestmark = pytest.mark.integration
RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "calibration" / "per_query_scores.json"
LOOKS = (10, 20, 30)


def _sets() -> dict:
    return json.loads(RECORDED.read_text())["sets"]


def _populations() -> list[tuple[sides.Population, str, float, int]]:
    """(population, comparator, threshold, claims drawn) per claim kind, 350 claims in all."""
    cr, hq = (({k: np.array(v) for k, v in _sets()[s].items()}) for s in ("cranfield", "halueval-qa"))
    return [
        (sides.Population("cranfield nDCG hybrid-dense", "difference", cr["hybrid:nDCG@10"], cr["dense:nDCG@10"]),
         ">", 0.0, 50),
        (sides.Population("halueval nDCG bm25-dense", "difference", hq["bm25:nDCG@10"], hq["dense:nDCG@10"]),
         ">=", 0.05, 25),
        (sides.Population("halueval nDCG hybrid-dense", "difference", hq["hybrid:nDCG@10"], hq["dense:nDCG@10"]),
         ">", 0.0, 25),  # a '>' claim whose baseline is often perfect: untestable rows
        (sides.Population("cranfield recall hybrid/dense", "relative", cr["hybrid:Recall@10"], cr["dense:Recall@10"]),
         ">=", 0.05, 25),
        (sides.Population("halueval recall bm25/dense", "relative", hq["bm25:Recall@10"], hq["dense:Recall@10"]),
         ">=", 0.05, 25),
        (sides.Population("halueval hit hybrid-dense", "binary", hq["hybrid:Recall@10"], hq["dense:Recall@10"]),
         ">=", 0.05, 50),
        (sides.Population("cranfield recall>=.5 bm25-dense", "binary", (cr["bm25:Recall@10"] >= 0.5) * 1.0,
                          (cr["dense:Recall@10"] >= 0.5) * 1.0), ">=", 0.05, 50),
        (sides.Population("halueval dense hit rate", "proportion", hq["dense:Recall@10"]), ">=", 0.95, 50),
        (sides.Population("cranfield hybrid recall>=.5 rate", "proportion", (cr["hybrid:Recall@10"] >= 0.5) * 1.0),
         ">=", 0.5, 50),
    ]


def _production(pop: sides.Population, c: np.ndarray, b: np.ndarray | None, conf: float, rule: str) -> object:
    """The Effect the production path measures for this claim at this look."""
    if pop.kind == "proportion":
        return proportion_effect(c.astype(bool), confidence=conf, interval=None if rule == "after" else "wilson")
    kw = dict(relative=pop.kind == "relative", binary=pop.kind == "binary", confidence=conf, n_resamples=10, seed=1)
    if rule == "before" and pop.kind == "relative":
        kw["interval"] = "delta"
    return paired_effect(c, b, **kw)


@pytest.mark.parametrize("rule", ["before", "after"])
def test_vectorised_verdicts_equal_the_production_path(rule):
    total = 0
    for k, (pop, comparator, threshold, sims) in enumerate(_populations()):
        fn, boundary = sides.rule_of(rule, pop.kind)
        design = SequentialDesign(LOOKS, boundary=boundary)
        A, B = sides.draw(pop, threshold, LOOKS[-1], sims, np.random.default_rng(36 + k))
        for n, conf in zip(design.looks, design.confidences):
            lo, hi, blocked, reach = fn(A[:, :n], None if B is None else B[:, :n], conf, threshold, pop.bounds)
            sup, ref = rules.verdicts(lo, hi, blocked, reach, comparator, threshold)
            for i in range(sims):
                if rule == "after":
                    with anytime_intervals():
                        e = _production(pop, A[i, :n], None if B is None else B[i, :n], conf, rule)
                else:
                    e = _production(pop, A[i, :n], None if B is None else B[i, :n], conf, rule)
                v = decide(e, comparator, threshold, Decision("ci")).verdict
                assert (v == "supported", v == "refuted") == (bool(sup[i]), bool(ref[i])), (pop.name, n, i, v)
                ci = relative_contrast(e, threshold).ci  # the interval the verdict read
                if np.all(np.isfinite(ci)):
                    assert (lo[i], hi[i]) == pytest.approx(ci, rel=1e-9, abs=1e-12), (pop.name, n, i)
        total += sims
    assert total * len(LOOKS) == 1050




JUDGE_RULINGS = Path(__file__).resolve().parents[1] / "fixtures" / "calibration" / "judge_rulings.json"


def test_vectorised_kappa_verdicts_equal_the_production_path():
    """κ decided in looks (JUDGE-KAPPA): the vectorised rule equals `kappa_effect_at` → `decide` claim by claim and
    look by look (300 claim-looks: 100 claims × looks at 10, 20 and 30 items), on claims drawn from the default
    judge's recorded rulings on HaluEval (`fixtures/calibration/judge_rulings.json`, failed rulings included) with
    the truth at the threshold and far below it; the interval the verdict reads is equal too."""
    from harness.judge.reliability import kappa_effect_at
    from harness.stats.kappa import kappa_contrast

    (rec,) = json.loads(JUDGE_RULINGS.read_text())["judges"].values()
    verdicts, labels = rec["verdicts"], rec["labels"]
    assert any(v is None for v in verdicts)  # the population holds failed rulings (a third value of the contrast)
    pop = sides.kappa_population("recorded judge", verdicts, labels)
    design = SequentialDesign(LOOKS, boundary="anytime")
    rng = np.random.default_rng(37)
    idx = np.concatenate([rng.choice(len(verdicts), size=(50, LOOKS[-1]), p=sides.truth_weights(pop, truth))
                          for truth in (0.4, 0.0)])  # at the threshold, and far below it (refuted claims)
    A, B = pop.candidate[idx], pop.baseline[idx]
    decided = 0
    for n, conf in zip(design.looks, design.confidences):
        lo, hi, blocked, reach = rules.AFTER["kappa"](A[:, :n], B[:, :n], conf, 0.4, pop.bounds)
        sup, ref = rules.verdicts(lo, hi, blocked, reach, ">=", 0.4)
        for i in range(len(idx)):
            with anytime_intervals():
                e = kappa_effect_at([verdicts[j] for j in idx[i, :n]], [labels[j] for j in idx[i, :n]],
                                    right_share=0.5, confidence=conf)
            v = decide(e, ">=", 0.4, Decision("ci")).verdict
            assert (v == "supported", v == "refuted") == (bool(sup[i]), bool(ref[i])), (n, i, v)
            assert (lo[i], hi[i]) == pytest.approx(kappa_contrast(e, 0.4).ci, rel=1e-9, abs=1e-12), (n, i)
            decided += v in ("supported", "refuted")
    assert 0 < decided < len(idx) * len(LOOKS)  # the comparison saw decided and undecided claim-looks
