"""Judging at the scale of a benchmark: a judge's agreement with a labelled set (κ, accuracy, flip rate, and α
among judges), and many answers judged claim by claim. Loops are bounded-concurrent and show progress."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from harness.judge.labelled import LabelledClaim
from harness.judge.llm_judge import AnswerJudgement, Judge, LexicalJudge, Ruling, judge_answer, perturbed
from harness.judge.reliability import JudgeReliability, krippendorff_alpha, majority_verdict
from harness.parallel import ordered_map
from harness.progress import progress

__all__ = ["AgreementStudy", "judge_answers", "measure_agreement", "summarize_by_type"]


@dataclass
class AgreementStudy:
    """Each judge's rulings on a labelled set (twice for LLM judges: `rulings` holds both passes' `Ruling`s, the
    requests included), their reliability and their agreement."""

    labelled_set: str
    items: list[LabelledClaim]
    first: dict[str, list[bool | None]]
    second: dict[str, list[bool | None]]
    reliability: dict[str, JudgeReliability]
    alpha: float
    majority: list[Any] = field(default_factory=list)
    rulings: dict[str, tuple[list[Ruling], list[Ruling]]] = field(default_factory=dict)

    def majority_reliability(self) -> JudgeReliability:
        """The majority verdict of every judge as a judge of its own (a tie is a failed ruling: a disagreement)."""
        return JudgeReliability.measure("majority(" + ", ".join(self.first) + ")", self.labelled_set,
                                        self.majority, [i.supported for i in self.items])


def _concurrency(judge: Judge) -> int:
    return getattr(getattr(judge, "llm", None), "concurrency", 1)


def _rule_all(stage: str, items: list[LabelledClaim], rule: Callable[[LabelledClaim], Any], concurrency: int) -> list:
    """`rule` on every item, up to `concurrency` at once, with a progress line."""
    bar = progress(stage, len(items))

    def one(it: LabelledClaim) -> Any:
        out = rule(it)
        bar.advance()
        return out

    out = ordered_map(one, items, concurrency)
    bar.close()
    return out


def measure_agreement(judges: Sequence[Judge], items: Sequence[LabelledClaim], labelled_set: str, *, seed: int = 0,
                      lexical: bool = True) -> AgreementStudy:
    """Rule on every item with each judge; LLM judges twice: with `seed`, then the recheck pass
    (`LLMJudge.rule(recheck=True)`: the rubric's other wording at the recheck temperature, seed + 1, uncached)
    for the flip rate. The lexical baseline rules once (it cannot flip). κ, accuracy and flip rate per judge;
    Krippendorff's α and the majority verdict over all of them."""
    everyone: list[Judge] = list(judges) + ([LexicalJudge()] if lexical else [])
    items = list(items)
    labels = [i.supported for i in items]
    first: dict[str, list[bool | None]] = {}
    second: dict[str, list[bool | None]] = {}
    rulings: dict[str, tuple[list[Ruling], list[Ruling]]] = {}
    reliability: dict[str, JudgeReliability] = {}
    for judge in everyone:
        if isinstance(judge, LexicalJudge):
            def lexical_rule(it: LabelledClaim, j: LexicalJudge = judge) -> bool | None:
                return j.supported(it.item)

            first[judge.name] = _rule_all(f"judge {judge.name} on {labelled_set}", items, lexical_rule, 1)
            reliability[judge.name] = JudgeReliability.measure(judge.name, labelled_set, first[judge.name], labels,
                                                               seed=seed)
            continue
        j: Any = judge

        def ruling(it: LabelledClaim, j: Any = j) -> Ruling:
            return j.rule(it.item, seed=seed)

        def reruling(it: LabelledClaim, j: Any = j) -> Ruling:
            return j.rule(it.item, seed=seed + 1, recheck=True)

        once = _rule_all(f"judge {j.name} on {labelled_set}", items, ruling, _concurrency(j))
        again = _rule_all(f"judge {j.name} on {labelled_set} (again: {j.recheck_prompt} at temperature "
                          f"{j.recheck_temperature})", items, reruling, _concurrency(j))
        rulings[j.name] = (once, again)
        first[j.name], second[j.name] = [r.verdict for r in once], [r.verdict for r in again]
        reliability[j.name] = JudgeReliability.measure(
            j.name, labelled_set, first[j.name], labels, second=second[j.name],
            perturbed=[perturbed(a, b) for a, b in zip(once, again)], recheck=j.recheck_settings(seed + 1),
            temperature=j.temperature, seed=seed)
    from harness import provenance

    for rel in reliability.values():
        provenance.note_judge(rel.as_context())
    units = [[first[j.name][k] for j in everyone] for k in range(len(items))]
    alpha = krippendorff_alpha(units) if len(everyone) > 1 else float("nan")
    return AgreementStudy(labelled_set, items, first, second, reliability, alpha, majority_verdict(units), rulings)


def judge_answers(judge: Judge, answers: Sequence[tuple[str, str, str]], *, max_claims: int | None = 8,
                  seed: int = 0, stage: str = "judging answers") -> list[AnswerJudgement]:
    """Judge (question, context, answer) triples claim by claim, up to the judge's concurrency at once."""
    bar = progress(f"{stage} ({judge.name})", len(answers))

    def one(t: tuple[str, str, str]) -> AnswerJudgement:
        j = judge_answer(judge, *t, max_claims=max_claims, seed=seed)
        bar.advance()
        return j

    out = ordered_map(one, list(answers), _concurrency(judge))
    bar.close()
    return out


def summarize_by_type(judgements: Sequence[AnswerJudgement], types: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Mean faithfulness and hallucination rate per query type (and "all") over the answers with at least one
    ruled claim, beside what was left out: answers, abstentions, failed rulings, claims cut."""
    if len(judgements) != len(types):
        raise ValueError(f"{len(judgements)} judgements for {len(types)} query types")
    out: dict[str, dict[str, Any]] = {}
    for qtype in sorted(set(types)) + ["all"]:
        sel = [j for j, t in zip(judgements, types) if qtype in ("all", t)]
        ruled = [j for j in sel if j.ruled]
        out[qtype] = {name: float(np.mean([getattr(j, name) for j in ruled])) if ruled else float("nan")
                      for name in ("faithfulness", "hallucination_rate")}
        out[qtype].update(n=len(ruled), answers=len(sel), abstained=sum(bool(j.extra.get("abstained")) for j in sel),
                          failed_rulings=sum(j.failures for j in sel), claims_cut=sum(j.claims_cut for j in sel))
    return out
