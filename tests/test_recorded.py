"""A sequential claim's recorded outcomes (`harness.recorded`): the effect they give at any look is the claim's own,
and a claim decided through `rag_check_sequential` is decided again from its row in `results.json` look by look,
the verdict and every look's interval reproduced; cut at an earlier look, it is what a budget would have left."""
from __future__ import annotations

import json

import numpy as np
import pytest

from harness.catalogue import load_catalogue
from harness.config import SequentialSettings
from harness.judge.reliability import kappa_effect_at
from harness.recorded import Outcomes, replay_check
from harness.stats import paired_effect, proportion_effect
from harness.stats._effect import anytime_intervals
from tests.pytester_kit import new_project

pytest_plugins = ["pytester"]


@pytest.mark.unit
def test_a_rate_s_outcomes_give_its_effect_and_a_look_reads_the_queries_drawn_by_then():
    values = [True, False, True, True, False, True]
    at = [1, 3, 4, 7, 9, 10]  # a claim about some queries only: the 2nd, 5th, 6th and 8th count for nothing
    o = Outcomes.rate(values, at)
    assert o.upto(4).values == (True, False, True) and o.upto(2).values == (True,) and o.upto(0).values == ()
    with anytime_intervals():
        for n, k in [(4, 3), (9, 5), (10, 6)]:
            assert o.upto(n).effect(0.95) == proportion_effect(values[:k], confidence=0.95)
    assert Outcomes.rate([True, False]).query_at == (1, 2)
    assert Outcomes.from_context(json.loads(json.dumps(o.as_context()))) == o


@pytest.mark.unit
@pytest.mark.parametrize("relative, binary", [(True, False), (False, False), (False, True)])
def test_a_paired_claim_s_outcomes_give_its_effect_at_each_look(relative, binary):
    rng = np.random.default_rng(5)
    c = (rng.random(20) < 0.6).astype(float) if binary else rng.random(20)
    b = (rng.random(20) < 0.4).astype(float) if binary else rng.random(20)
    at = list(range(2, 42, 2))  # every other draw counts
    o = Outcomes.paired(c, b, at, relative=relative, binary=binary, seed=1)
    for n, k in [(10, 5), (41, 20)]:
        with anytime_intervals():
            assert o.upto(n).effect(0.95) == paired_effect(c[:k], b[:k], relative=relative, binary=binary, seed=1,
                                                           confidence=0.95)
        assert o.upto(n).effect(0.9) == paired_effect(c[:k], b[:k], relative=relative, binary=binary, seed=1,
                                                      confidence=0.9)
    assert Outcomes.from_context(json.loads(json.dumps(o.as_context()))) == o


@pytest.mark.unit
def test_kappa_s_outcomes_give_its_effect_at_each_look():
    rng = np.random.default_rng(3)
    labels = [bool(x) for x in rng.random(30) < 0.5]
    rulings = [None if r < 0.1 else bool(r < 0.6) for r in rng.random(30)]
    o = Outcomes.kappa(rulings, labels, right_share=0.5, seed=7, available=30)
    for n in (10, 30):
        assert o.upto(n).effect(0.95) == kappa_effect_at(rulings[:n], labels[:n], right_share=0.5, confidence=0.95,
                                                         seed=7, of_all=n >= 30)
        with anytime_intervals():
            assert o.upto(n).effect(0.99) == kappa_effect_at(rulings[:n], labels[:n], right_share=0.5,
                                                             confidence=0.99, seed=7, of_all=n >= 30)
    assert Outcomes.from_context(json.loads(json.dumps(o.as_context()))) == o


@pytest.mark.unit
@pytest.mark.parametrize("bad, message", [
    (lambda: Outcomes("mean", (1.0,), (1,)), "of kind 'mean'"),
    (lambda: Outcomes.rate([True, False], [1]), "2 outcomes but 1 draw positions"),
    (lambda: Outcomes.rate([True, False], [2, 1]), "draw order"),
    (lambda: Outcomes("kappa", ((True, True),), (1,)), "right_share"),
    (lambda: Outcomes.kappa([True], [True, False], right_share=0.5, seed=0, available=2), "1 rulings but 2 labels"),
    (lambda: Outcomes.paired([0.1, 0.2], [0.3]), "2 candidate scores but 1 baseline scores"),
])
def test_outcomes_that_cannot_be_replayed_are_refused(bad, message):
    with pytest.raises(ValueError, match=message):
        bad()


CATALOGUE = """
specs:
  - id: RATE
    title: The technique abstains on most negatives
    marker: benchmark
    decision: ci
    metric: share of negatives abstained on
    comparator: ">="
    threshold: 0.5
    source: demo
"""

TESTS = """
import pytest
from harness.recorded import Outcomes

pytestmark = pytest.mark.benchmark
CASES = {cases!r}


@pytest.mark.spec("RATE")
@pytest.mark.parametrize("case", list(CASES))
def test_rate(case, rag_check_sequential):
    values = CASES[case]
    at = [q for q in range(1, 2 * len(values) + 1) if q % 2]  # every other query counts (odd draws)

    def measure_at(n, confidence):
        o = Outcomes.rate(values, at).upto(n)
        return o.effect(confidence), {{"outcomes": o.as_context()}}

    rag_check_sequential("RATE", measure_at, 2 * len(values), dataset=case)
"""


@pytest.mark.integration
def test_a_claim_is_decided_again_from_its_row_look_by_look(pytester: pytest.Pytester):
    """Three claims on 60 draws (30 of them counted; looks at 12, 24, 36, 48 and 60 draws): one refuted at look 2
    (no negative abstained on), one supported at look 2 (every one), one that stops futile at look 3 (half, at the
    threshold). Each row's looks are reproduced from its own recorded outcomes, intervals to the last digit; cut
    after look 1, as a budget that refused look 2 would have left them, the two decided ones stop there undecided,
    and cut after the look they took they read as they did."""
    cases = {"refuted": [False] * 30, "supported": [True] * 30,
             "futile": [True, False] * 15}
    project = new_project(pytester, CATALOGUE)
    project.makepyfile(test_claims=TESTS.format(cases=cases))
    project.runpytest_subprocess("--report-dir", "out", "--spec-coverage=off", "-p", "no:randomly")
    checks = {c["context"]["dataset"]: c for c in json.loads((project.path / "out" / "results.json").read_text())["checks"]}
    spec = load_catalogue([project.path / "specs"])["RATE"]
    settings = SequentialSettings()
    seen = set()
    for case, check in checks.items():
        out = replay_check(check, spec, settings)
        history = check["context"]["sequential"]["history"]
        assert [(lk.n, lk.verdict) for lk in out.looks] == [(h["n"], h["verdict"]) for h in history]
        assert [list(lk.ci) for lk in out.looks] == [h["ci"] for h in history]
        assert [lk.estimate for lk in out.looks] == [h["estimate"] for h in history]
        seen.add((case, out.verdict.verdict, out.stopped_at, out.futile))
    assert seen == {("refuted", "refuted", 2, False), ("supported", "supported", 2, False),
                    ("futile", "inconclusive", 3, True)}
    for case in ("refuted", "supported"):
        cut = replay_check(checks[case], spec, settings, looks=1)
        assert cut.budget_reason is not None and cut.stopped_at == 1 and cut.verdict.verdict == "inconclusive"
        assert replay_check(checks[case], spec, settings, looks=2).verdict.verdict == case
    with pytest.raises(ValueError, match="3 looks asked, the row took 2"):
        replay_check(checks["refuted"], spec, settings, looks=3)
