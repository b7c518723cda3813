"""`harness.stats.kappa`: Cohen's κ against labels of a fixed share as a ratio of per-item means, its betting
confidence sequence and its linear contrast at a threshold; `harness.judge.study.AgreementDraws`, the agreement
study drawn item by item; `harness.stats.sequential.first_look`, what a shared study draws in its set-up."""
from __future__ import annotations

import dataclasses
import math
import random

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from harness.config import SequentialSettings
from harness.judge import ClaimItem, LexicalJudge
from harness.judge.labelled import LabelledClaim
from harness.judge.reliability import cohen_kappa, kappa_effect_at
from harness.judge.study import AgreementDraws, agreement_of, measure_agreement, rule_item
from harness.stats._effect import anytime_intervals
from harness.stats._verdict import Decision, decide
from harness.stats.betting import betting_interval
from harness.stats.kappa import contrast_range, kappa_contrast, kappa_sequence, kappa_terms
from harness.stats.sequential import SequentialDesign, first_look

pytestmark = pytest.mark.unit


def _rulings(n: int, p_right: float, p_failed: float, seed: int) -> tuple[list[bool | None], list[bool]]:
    rng = random.Random(seed)
    labels = [rng.random() < 0.5 for _ in range(n)]
    verdicts: list[bool | None] = [None if rng.random() < p_failed else (y if rng.random() < p_right else not y)
                                   for y in labels]
    return verdicts, labels


@pytest.mark.parametrize("seed", range(5))
def test_the_ratio_of_means_is_cohens_kappa_with_a_failed_ruling_a_category_of_its_own(seed):
    verdicts, labels = _rulings(60, 0.75, 0.15, seed)
    u, w = kappa_terms(verdicts, labels, sum(labels) / len(labels))  # the labels' own share: the whole set's κ
    as_text = ["failed" if v is None else str(v) for v in verdicts]
    reference = cohen_kappa_score(as_text, [str(y) for y in labels])  # scikit-learn, independently
    assert u.mean() / w.mean() == pytest.approx(reference, abs=1e-12)
    assert u.mean() / w.mean() == pytest.approx(cohen_kappa(verdicts, labels), abs=1e-12)


def test_the_contrast_range_holds_every_per_item_value():
    for share in (0.5, 0.3, 0.8):
        for theta in (-1.0, -0.3, 0.0, 0.4, 0.9, 1.0):
            lo, hi = contrast_range(share, theta)
            # every (ruling, label) an item can have, through kappa_terms: its contrast u - theta*w
            u, w = kappa_terms([True, True, False, False, None, None], [True, False, True, False, True, False], share)
            values = u - theta * w
            assert values.min() >= lo - 1e-12 and values.max() <= hi + 1e-12
            assert values.min() == pytest.approx(lo)  # the lower end is reached (a wrong ruling, the larger label)


def test_the_interval_is_the_thresholds_whose_contrast_holds_zero():
    verdicts, labels = _rulings(80, 0.7, 0.1, 3)
    e = kappa_sequence(verdicts, labels, right_share=0.5)
    lo, hi = e.ci
    assert -1.0 <= lo < e.estimate < hi <= 1.0
    u, w = kappa_terms(verdicts, labels, 0.5)
    for theta in np.linspace(-0.9, 0.9, 37):
        c_lo, c_hi = betting_interval(u - theta * w, *contrast_range(0.5, theta))
        held = c_lo <= 0.0 <= c_hi
        if abs(theta - lo) > 2e-3 and abs(theta - hi) > 2e-3:  # the refined ends are found to a grid step
            assert held == (lo <= theta <= hi), theta


def test_a_verdict_decides_on_the_contrast_at_the_threshold():
    verdicts, labels = _rulings(120, 0.55, 0.05, 7)  # κ near 0.1
    e = kappa_sequence(verdicts, labels, right_share=0.5)
    c = kappa_contrast(e, 0.4)
    u, w = kappa_terms(verdicts, labels, 0.5)
    lo, hi = betting_interval(u - 0.4 * w, *contrast_range(0.5, 0.4))
    assert c.ci == pytest.approx((0.4 + lo / w.mean(), 0.4 + hi / w.mean()))
    assert (c.ci[1] < 0.4) == (hi < 0.0) and hi < 0.0
    # the verdict reads the contrast, not the effect's own (inverted) interval: widened to [-1, 1], still refuted
    assert decide(dataclasses.replace(e, ci=(-1.0, 1.0)), ">=", 0.4, Decision("ci")).verdict == "refuted"
    # another kind, or a bootstrap κ, is left as it is
    boot = kappa_effect_at(verdicts, labels, right_share=0.5)
    assert kappa_contrast(boot, 0.4) is boot


def test_inside_a_look_kappa_is_the_sequence_and_outside_the_bootstrap():
    verdicts, labels = _rulings(40, 0.8, 0.0, 2)
    with anytime_intervals():
        seq = kappa_effect_at(verdicts, labels, right_share=0.5)
    assert seq.interval_method == "betting" and seq.pairs is not None
    fixed = kappa_effect_at(verdicts, labels, right_share=0.5)
    assert fixed.interval_method == "percentile bootstrap" and fixed.estimate == cohen_kappa(verdicts, labels)
    one = kappa_effect_at([True] * 40, labels, right_share=0.5)
    assert one.exact and one.ci == (0.0, 0.0)  # one verdict everywhere: 0 in every resample
    assert not kappa_effect_at([True] * 40, labels, right_share=0.5, of_all=False).exact  # a prefix: not exact
    with anytime_intervals():  # in looks a prefix proves nothing of the items not yet drawn
        assert not kappa_effect_at([True] * 40, labels, right_share=0.5).exact


@pytest.mark.parametrize("truth,p_right", [(0.4, 0.7), (0.0, 0.5), (0.8, 0.9)])
def test_in_looks_kappa_holds_each_side_and_decides_the_way_the_truth_lies(truth, p_right):
    """A quick guard through the verdict a claim reads (`decide`; the per-side calibration on real rulings is
    CALIB-SIDES-KAPPA-N30/N225): a judge right `p_right` of the time on balanced labels (κ = 2·p_right − 1), looked
    at 10/20/30/40 items, 300 claims. At the threshold neither side errs past 2.5%; 0.4 from it (κ 0 or 0.8) the claim
    is decided the way the truth lies in at least 30% of claims by 40 items (0.40 measured for κ = 0), never the other
    way."""
    rng = np.random.default_rng(0)
    counts = {"supported": 0, "refuted": 0}
    sims = 300
    for _ in range(sims):
        labels = [bool(y) for y in rng.random(40) < 0.5]
        right = rng.random(40) < p_right
        verdicts = [y if r else not y for y, r in zip(labels, right)]
        for n in (10, 20, 30, 40):
            with anytime_intervals():
                e = kappa_effect_at(verdicts[:n], labels[:n], right_share=0.5)
            v = decide(e, ">=", 0.4, Decision("ci")).verdict
            if v in counts:
                counts[v] += 1
                break
    if truth == 0.4:
        assert counts["supported"] / sims <= 0.025 and counts["refuted"] / sims <= 0.025, counts
    else:
        right_way, wrong_way = ("supported", "refuted") if truth > 0.4 else ("refuted", "supported")
        assert counts[wrong_way] == 0 and counts[right_way] / sims >= 0.3, counts


def test_with_an_unbalanced_design_kappa_can_fall_below_minus_one_and_the_interval_follows():
    labels = [False] * 10  # a prefix of a design with r = 0.7 that drew only hallucinated answers
    verdicts = [True] * 10  # wrong on every item, on the larger label
    e = kappa_sequence(verdicts, labels, right_share=0.7)
    bottom, top = -0.7 / 0.3, 1.0
    assert e.estimate == pytest.approx(bottom) and e.attainable == pytest.approx((bottom, top))
    assert bottom - 1e-12 <= e.ci[0] <= e.estimate + 1e-12 and e.estimate <= e.ci[1] <= top
    c = kappa_contrast(e, 0.4)
    assert bottom <= c.ci[0] <= c.ci[1] <= top  # cut to κ's range
    balanced = kappa_sequence([False, True] * 5, [True, False] * 5, right_share=0.5)
    assert balanced.estimate == pytest.approx(-1.0) and balanced.ci[0] >= -1.0


def _items(n: int) -> list[LabelledClaim]:
    rng = random.Random(4)
    return [LabelledClaim(ClaimItem("q", "The fee is 5 dollars and the office opens at nine.",
                                    "The fee is 5 dollars." if rng.random() < 0.5 else "The fee is 9 euros."),
                          rng.random() < 0.5, f"a{k}") for k in range(n)]


def test_the_agreement_study_draws_item_by_item_and_its_prefix_is_the_study_of_those_items():
    items = _items(12)
    calls: list[str] = []

    def keep(compute, item):
        calls.append(item.answer_id)
        return compute(), ("2026-11-27" if item.answer_id == "a0" else None)

    draws = AgreementDraws([LexicalJudge()], items, "toy", keep=keep)
    study = draws.study_at(5)
    assert calls == [f"a{k}" for k in range(5)] and draws.draws.drawn == 5  # only what was asked
    assert draws.replayed_from == "2026-11-27"
    whole = measure_agreement([], items[:5], "toy")  # the lexical baseline alone, measured at once
    assert study.first == whole.first and study.reliability["lexical"].kappa == whole.reliability["lexical"].kappa
    draws.study_at(8)
    assert calls == [f"a{k}" for k in range(8)]  # the next look draws only the 3 not yet drawn
    assert draws.right_share == sum(i.supported for i in items) / 12  # the design's share, over every item
    with pytest.raises(ValueError, match="3 items' rulings for 2 items"):
        agreement_of([LexicalJudge()], items[:2], [rule_item([LexicalJudge()], i) for i in items[:3]], "toy")


def test_first_look_is_the_designs_first_look():
    s = SequentialSettings()
    assert first_look(s, 30) == 10 == SequentialDesign.for_claim(s, 30).looks[0]
    assert first_look(s, 150) == 30 == SequentialDesign.for_claim(s, 150).looks[0]
    assert first_look(SequentialSettings(look_every=15), 30) == 15
    assert first_look(SequentialSettings(enabled=False), 30) == 30  # one look: the whole study
    assert first_look(s, 1) == 1 and first_look(s, 0) == 0
    assert math.isclose(first_look(s, 7), 7)


def test_the_report_keeps_the_judges_reliability_measured_on_more_items(monkeypatch):
    from harness import provenance

    monkeypatch.setattr(provenance, "_STATE", {k: {} for k in provenance._STATE})  # this test's own, empty
    provenance.note_judge({"judge": "j", "labelled_set": "s", "n": 30, "kappa": 0.1})
    provenance.note_judge({"judge": "j", "labelled_set": "s", "n": 20, "kappa": 0.5})  # a look's first items
    assert provenance.snapshot()["judges"]["j on s"]["n"] == 30
    provenance.note_judge({"judge": "j", "labelled_set": "s", "n": 30, "kappa": 0.2})  # measured again: the later
    assert provenance.snapshot()["judges"]["j on s"]["kappa"] == 0.2
