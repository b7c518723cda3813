"""Issue 31's judge items with scripted judges: failed rulings count against the judge (κ and the flag), a κ from
fewer items than JUDGE-KAPPA asks cannot be supported, and the flip rate is measured against a second ruling that
can differ (another wording, a sampled temperature), so a second ruling that repeats the first (the control of
JUDGE-FLIP-RATE) fails the check instead of passing it at 0 by construction."""
from __future__ import annotations

import math
import re

import pytest

from harness.catalogue import PROTOCOL_CATALOGUE, load_catalogue
from harness.judge import ClaimItem, JudgeReliability, LLMJudge, cohen_kappa
from harness.judge.labelled import LabelledClaim
from harness.judge.llm_judge import Ruling, perturbed
from harness.judge.reliability import recheck_flips
from harness.judge.study import measure_agreement
from harness.stats._verdict import Verdict, below_min_n, decide
from tests.pytester_kit import new_project

pytest_plugins = ["pytester"]
CATALOGUE = load_catalogue([PROTOCOL_CATALOGUE])
CLAIM = re.compile(r"^Claim(?: to check)?: (.*)$", re.M)


def _items(labels: list[bool], tag: str = "c") -> list[LabelledClaim]:
    return [LabelledClaim(ClaimItem("q", "The fee is 5 dollars.", f"{tag}{k} {'yes' if y else 'no'}"), y, f"a{k}")
            for k, y in enumerate(labels)]


def _judge(scripted_llm, name: str, verdict, **kw) -> LLMJudge:
    """A scripted judge: `verdict(claim, recheck_wording, temperature)` -> True / False / None (None: a reply that
    cannot be read, a failed ruling)."""
    def respond(messages, params):
        text = messages[-1]["content"]
        if text.startswith("That was not valid JSON"):  # the repair request: still no ruling
            return "it depends"
        v = verdict(CLAIM.search(text).group(1), text.startswith("Claim to check"), params.get("temperature"))
        return "it depends" if v is None else '{"supported": %s}' % str(v).lower()

    return LLMJudge(scripted_llm(respond, name=name).with_role("judge"), **kw)


# ---------------------------------------------------------------- failed rulings count against the judge
@pytest.mark.unit
def test_recheck_flips_by_cause():
    # ruled: items 0, 1, 3, 4, 5. Item 1 changed, 3's re-ruling failed, 4's repeated the first request: 3 of 5
    rate, n, counts = recheck_flips([True, False, None, True, True, False], [True, True, True, None, True, False],
                                    [True, True, True, True, False, True])
    assert (rate, n, counts) == (3 / 5, 5, {"changed": 1, "failed": 1, "unperturbed": 1})
    assert math.isnan(recheck_flips([None], [True], [True])[0])


@pytest.mark.unit
def test_failed_rulings_count_as_disagreements_in_kappa_and_the_flag():
    """verdicts T, failed, F, T against labels T, T, F, F. Every item: p_o = 2/4, marginals judge T 2, F 1,
    failed 1 and labels T 2, F 2, p_e = (2·2 + 1·2)/16 = 0.375, κ = 0.125/0.625 = 0.2. The ruled items alone
    (T, F, T vs T, F, F): p_o = 2/3, p_e = 4/9, κ = 0.4, kept beside it as kappa_ruled."""
    from sklearn.metrics import cohen_kappa_score

    rel = JudgeReliability.measure("j", "s", [True, None, False, True], [True, True, False, False],
                                   second=[True, True, True, None], perturbed=[True] * 4)
    assert rel.n == 4 and rel.failures == 1 and rel.kappa == pytest.approx(0.2)
    assert rel.kappa == pytest.approx(cohen_kappa_score(["T", "x", "F", "T"], ["T", "T", "F", "F"]))
    assert rel.kappa_ruled == pytest.approx(0.4) and rel.accuracy == pytest.approx(0.5)
    assert rel.unreliable and "1 failed rulings of 4 counted as disagreements" in rel.reasons[0]
    # flips over the 3 ruled items: item 2 changed, item 3's re-ruling failed
    assert (rel.flip_rate, rel.flip_n) == (pytest.approx(2 / 3), 3) and rel.recheck["unconfirmed"] == 2
    with pytest.raises(ValueError, match="perturbed"):
        JudgeReliability.measure("j", "s", [True], [True], second=[True])


@pytest.mark.unit
def test_a_judge_right_whenever_it_rules_but_failing_half_the_time_is_flagged(rag_scripted_llm):
    """10 items, 5 supported. The judge gives the label on items 0-2 (supported) and 5-6 (not), fails on the
    rest: κ over the ruled 5 is 1, over all 10 p_o = 0.5, p_e = 0.3·0.5 + 0.2·0.5 = 0.25, κ = 1/3 < 0.4."""
    labels = [True] * 5 + [False] * 5
    fails = {3, 4, 7, 8, 9}
    judge = _judge(rag_scripted_llm, "half-failing",
                   lambda claim, *_: None if int(claim.split()[0][1:]) in fails else claim.endswith("yes"))
    rel = measure_agreement([judge], _items(labels), "toy", lexical=False).reliability[judge.name]
    assert rel.failures == 5 and rel.n == 10 and rel.kappa_ruled == 1.0
    assert rel.kappa == pytest.approx(1 / 3) and rel.accuracy == pytest.approx(0.5)
    assert rel.unreliable


# ---------------------------------------------------------------- JUDGE-KAPPA needs its 400 items
@pytest.mark.unit
def test_a_kappa_from_fewer_items_than_the_spec_asks_cannot_be_supported(rag_scripted_llm):
    """A judge right on 28 of 30 items: κ = 0.867, its whole interval above 0.4 (supported as an interval), but
    JUDGE-KAPPA asks 400 items: inconclusive, 400 needed. A refutation stands at any n."""
    spec = CATALOGUE["JUDGE-KAPPA"]
    assert spec.min_n == 400
    labels = [k % 2 == 0 for k in range(30)]
    judge = _judge(rag_scripted_llm, "mostly-right", lambda claim, *_: claim.endswith("yes") != (claim.split()[0] in
                                                                                           ("c0", "c1")))
    rel = measure_agreement([judge], _items(labels), "toy", lexical=False).reliability[judge.name]
    assert rel.n == 30 and rel.kappa == pytest.approx(cohen_kappa([not y for y in labels[:2]] + labels[2:], labels))
    from harness.stats._effect import Effect

    effect = Effect("kappa", rel.kappa, rel.kappa_ci, rel.n, 1.0, interval_method="percentile bootstrap")
    v = decide(effect, spec.comparator, spec.threshold, spec.decision)
    assert v.verdict == "supported", v
    held = below_min_n(v, rel.n, spec.min_n)
    assert held.verdict == "inconclusive" and held.queries_needed == 400 and "at least 400" in held.reason
    assert below_min_n(v, 400, spec.min_n) == v
    refuted = Verdict("refuted", "the whole CI violates >= 0.4")
    assert below_min_n(refuted, 30, spec.min_n) == refuted
    with pytest.raises(TypeError, match="at least 400"):
        below_min_n(v, None, spec.min_n)


@pytest.mark.integration
def test_check_reads_inconclusive_below_min_n_and_the_catalogue_checks_it(pytester: pytest.Pytester):
    project = new_project(pytester, """
        specs:
          - id: DEMO-N
            title: A share stays above a bound, on at least 50 items
            marker: unit
            min_n: 50
            metric: share
            comparator: ">="
            threshold: 0.5
            source: demo
    """)
    project.makepyfile(test_demo="""
        import pytest

        @pytest.mark.spec("DEMO-N")
        @pytest.mark.parametrize("n", [20, 50])
        def test_share(rag_check, n):
            rag_check("DEMO-N", 0.9, n=n, dataset=f"n{n}")
""")
    project.runpytest_subprocess("--report-dir", "out").assert_outcomes(passed=2)
    import json

    row = {r["id"]: r for r in json.loads((project.path / "out" / "results.json").read_text())["specs"]}["DEMO-N"]
    by = {e["dataset"]: e for e in row["datasets"]}
    assert by["n20"]["verdict"] == "inconclusive" and by["n20"]["queries_needed"] == 50
    assert by["n50"]["verdict"] == "pass"
    from harness.catalogue import CatalogueError

    bad = project.path / "specs" / "demo.yaml"
    bad.write_text(bad.read_text().replace("min_n: 50", "min_n: 0"))
    with pytest.raises(CatalogueError, match="spec DEMO-N: field 'min_n' must be a positive integer"):
        load_catalogue([bad])


# ---------------------------------------------------------------- JUDGE-FLIP-RATE: a second ruling that can differ
@pytest.mark.unit
def test_perturbed_means_a_fresh_request_that_can_differ():
    first = Ruling(True, "support", "aaaa", 0.0, 0, True)
    assert perturbed(first, Ruling(True, "support_recheck", "bbbb", 0.0, 1, False))  # other wording
    assert perturbed(first, Ruling(True, "support", "aaaa", 0.7, 1, False))  # sampled
    assert not perturbed(first, Ruling(True, "support", "aaaa", 0.0, 1, False))  # greedy: the seed changes nothing
    assert not perturbed(first, Ruling(True, "support_recheck", "bbbb", 0.7, 1, True))  # the cache may answer
    sampled = Ruling(True, "support", "aaaa", 0.7, 0, False)
    assert perturbed(sampled, Ruling(True, "support", "aaaa", 0.7, 1, False))  # another draw


@pytest.mark.unit
def test_the_flip_rate_sees_a_judge_that_follows_the_wording_and_its_control_fails_the_check(rag_scripted_llm, under):
    """A judge that says "supported" to every claim in the recheck wording flips on the 6 unsupported items of
    12: 0.5. A judge that follows the labels in both wordings flips on none: 0.0, a pass. Under the control the
    second ruling repeats the first call: nothing is confirmed, 1.0 for both, and JUDGE-FLIP-RATE (<= 0.2) fails."""
    spec = CATALOGUE["JUDGE-FLIP-RATE"]
    assert spec.control == "judge-recheck-repeats-first-ruling"
    labels = [k % 2 == 0 for k in range(12)]
    wording = _judge(rag_scripted_llm, "follows-wording", lambda claim, recheck, _t: recheck or claim.endswith("yes"))
    steady = _judge(rag_scripted_llm, "steady", lambda claim, *_: claim.endswith("yes"))
    study = measure_agreement([wording, steady], _items(labels), "toy", seed=3, lexical=False)
    rel, ok = study.reliability[wording.name], study.reliability[steady.name]
    assert (rel.flip_rate, rel.flip_n, rel.recheck["changed"]) == (0.5, 12, 6) and rel.unreliable
    assert ok.flip_rate == 0.0 and spec.holds(ok.flip_rate) and not ok.unreliable
    assert ok.recheck["prompt"] == "support_recheck" and ok.recheck["temperature"] == 0.7 and ok.recheck["seed"] == 4
    again = study.rulings[steady.name][1][0]
    assert (again.prompt_key, again.temperature, again.seed, again.cache) == ("support_recheck", 0.7, 4, False)
    under(spec.control)
    broken = measure_agreement([wording, steady], _items(labels), "toy", seed=3, lexical=False).reliability
    for r in broken.values():
        assert r.flip_rate == 1.0 and r.recheck["unperturbed"] == 12 and not spec.holds(r.flip_rate)


@pytest.mark.unit
def test_the_recheck_temperature_reaches_the_model_and_a_greedy_seed_only_recheck_confirms_nothing(rag_scripted_llm):
    """A judge that flips whenever it is sampled (temperature > 0) on the items after the 4th of 10: 6 of 10
    with the recheck at 0.7 in the first wording. At temperature 0 in the first wording (the old second ruling:
    only the seed changed) the re-ruling cannot differ, so it confirms nothing: 1.0, never a pass by construction."""
    labels = [k % 2 == 0 for k in range(10)]

    def sampled(claim, _recheck, temperature):
        return claim.endswith("yes") != (bool(temperature) and int(claim.split()[0][1:]) >= 4)

    hot = _judge(rag_scripted_llm, "sampled-hot", sampled, recheck_prompt="support")
    rel = measure_agreement([hot], _items(labels), "toy", lexical=False).reliability[hot.name]
    assert rel.flip_rate == pytest.approx(0.6) and rel.recheck["changed"] == 6
    greedy = _judge(rag_scripted_llm, "sampled-greedy", sampled, recheck_prompt="support", recheck_temperature=0.0)
    rel = measure_agreement([greedy], _items(labels), "toy", lexical=False).reliability[greedy.name]
    assert rel.flip_rate == 1.0 and rel.recheck["unperturbed"] == 10 and rel.recheck["changed"] == 0


@pytest.mark.unit
def test_the_blind_judge_control_reaches_the_agreement_study(rag_scripted_llm, under):
    """judge-sees-no-context (JUDGE-KAPPA's and JUDGE-ALPHA's control) patches `LLMJudge.rule`, which the study
    calls: a judge that rules from the context then says "not supported" to everything."""
    def reads_context(messages, params):
        text = messages[-1]["content"]
        return '{"supported": %s}' % str("5 dollars" in text and " yes" in CLAIM.search(text).group(1)).lower()

    judge = LLMJudge(rag_scripted_llm(reads_context, name="reads-context").with_role("judge"))
    labels = [k % 2 == 0 for k in range(8)]
    assert measure_agreement([judge], _items(labels), "toy", lexical=False).reliability[judge.name].kappa == 1.0
    under("judge-sees-no-context")
    blind = measure_agreement([judge], _items(labels), "toy", lexical=False).reliability[judge.name]
    assert blind.kappa == 0.0 and blind.kappa_exact
