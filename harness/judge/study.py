"""Judging at the scale of a benchmark: a judge's agreement with a labelled set (κ, accuracy, flip rate, and α
among judges), and many answers judged claim by claim. Loops are bounded-concurrent and show progress."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from harness.judge.labelled import LabelledClaim
from harness.judge.llm_judge import AnswerJudgement, Judge, LexicalJudge, Ruling, judge_answer, perturbed
from harness.judge.reliability import JudgeReliability, krippendorff_alpha, majority_verdict
from harness.parallel import LazyMap, ordered_map
from harness.progress import progress

__all__ = ["AgreementDraws", "AgreementStudy", "ItemRulings", "agreement_of", "judge_answers", "measure_agreement",
           "rule_item", "summarize_by_type", "with_lexical"]


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

    def note_provenance(self) -> None:
        """Note each judge's reliability in the run's provenance (the report's judge header)."""
        from harness import provenance

        for rel in self.reliability.values():
            provenance.note_judge(rel.as_context())

    def majority_reliability(self) -> JudgeReliability:
        """The majority verdict of every judge as a judge of its own (a tie is a failed ruling: a disagreement)."""
        return JudgeReliability.measure("majority(" + ", ".join(self.first) + ")", self.labelled_set,
                                        self.majority, [i.supported for i in self.items])


def _concurrency(judge: Judge) -> int:
    return getattr(getattr(judge, "llm", None), "concurrency", 1)


@dataclass
class ItemRulings:
    """One labelled item's rulings: each LLM judge's first and second (`LLMJudge.rule(recheck=True)`) `Ruling`, each
    lexical judge's verdict, and the seconds they took when measured."""

    llm: dict[str, tuple[Ruling, Ruling]]
    lexical: dict[str, bool | None]
    seconds: float = 0.0


def rule_item(judges: Sequence[Judge], item: LabelledClaim, *, seed: int = 0) -> ItemRulings:
    """Every judge on one item: an LLM judge twice (with `seed`; then the recheck: the rubric's other wording at the
    recheck temperature, seed + 1, uncached), the lexical baseline once (it cannot flip)."""
    t0 = time.perf_counter()
    llm: dict[str, tuple[Ruling, Ruling]] = {}
    lexical: dict[str, bool | None] = {}
    for judge in judges:
        if isinstance(judge, LexicalJudge):
            lexical[judge.name] = judge.supported(item.item)
        else:
            j: Any = judge
            llm[j.name] = (j.rule(item.item, seed=seed), j.rule(item.item, seed=seed + 1, recheck=True))
    return ItemRulings(llm, lexical, time.perf_counter() - t0)


def agreement_of(judges: Sequence[Judge], items: Sequence[LabelledClaim], rulings: Sequence[ItemRulings],
                 labelled_set: str, *, seed: int = 0) -> AgreementStudy:
    """The study of these items from their rulings (`rule_item`, one per item, in order): κ, accuracy and flip
    rate per judge; Krippendorff's α and the majority verdict over all of them."""
    if len(rulings) != len(items):
        raise ValueError(f"{len(rulings)} items' rulings for {len(items)} items")
    items = list(items)
    labels = [i.supported for i in items]
    first: dict[str, list[bool | None]] = {}
    second: dict[str, list[bool | None]] = {}
    by_judge: dict[str, tuple[list[Ruling], list[Ruling]]] = {}
    reliability: dict[str, JudgeReliability] = {}
    for judge in judges:
        if isinstance(judge, LexicalJudge):
            first[judge.name] = [r.lexical[judge.name] for r in rulings]
            reliability[judge.name] = JudgeReliability.measure(judge.name, labelled_set, first[judge.name], labels,
                                                               seed=seed)
            continue
        j: Any = judge
        once, again = [r.llm[j.name][0] for r in rulings], [r.llm[j.name][1] for r in rulings]
        by_judge[j.name] = (once, again)
        first[j.name], second[j.name] = [r.verdict for r in once], [r.verdict for r in again]
        reliability[j.name] = JudgeReliability.measure(
            j.name, labelled_set, first[j.name], labels, second=second[j.name],
            perturbed=[perturbed(a, b) for a, b in zip(once, again)], recheck=j.recheck_settings(seed + 1),
            temperature=j.temperature, seed=seed)
    units = [[first[j.name][k] for j in judges] for k in range(len(items))]
    alpha = krippendorff_alpha(units) if len(judges) > 1 else float("nan")
    return AgreementStudy(labelled_set, items, first, second, reliability, alpha, majority_verdict(units), by_judge)


def with_lexical(judges: Sequence[Judge], lexical: bool = True) -> list[Judge]:
    """The judges, and the lexical baseline after them where `lexical`."""
    return list(judges) + ([LexicalJudge()] if lexical else [])


def measure_agreement(judges: Sequence[Judge], items: Sequence[LabelledClaim], labelled_set: str, *, seed: int = 0,
                      lexical: bool = True) -> AgreementStudy:
    """Rule on every item with each judge (`rule_item`: LLM judges twice, with `seed` and then the recheck pass for
    the flip rate; the lexical baseline once), up to the judges' concurrency at once, with a progress line; the study
    of them (`agreement_of`), whose judges' reliability is noted in the run's provenance."""
    everyone = with_lexical(judges, lexical)
    draws = AgreementDraws(everyone, items, labelled_set, seed=seed)
    study = draws.study_at(len(draws.items))
    study.note_provenance()
    return study


class AgreementDraws:
    """The agreement study drawn on demand, item by item in the items' order (`harness.parallel.LazyMap`), so that
    a claim decided on the first items (JUDGE-KAPPA, in looks) stops the study there and claims reading every item
    draw the rest. `keep(compute, item)`, where given, returns an item's rulings, computing them only where no
    earlier run measured them (`harness.replay`), and says when they were measured (None: now)."""

    def __init__(self, judges: Sequence[Judge], items: Sequence[LabelledClaim], labelled_set: str, *, seed: int = 0,
                 keep: Callable[[Callable[[], ItemRulings], LabelledClaim], tuple[ItemRulings, str | None]] | None
                 = None):
        self.judges, self.items, self.labelled_set, self.seed = list(judges), list(items), labelled_set, seed
        self.measured: list[str] = []  # when an earlier run measured the items replayed

        def one(item: LabelledClaim) -> ItemRulings:
            def compute() -> ItemRulings:
                return rule_item(self.judges, item, seed=seed)
            if keep is None:
                return compute()
            out, when = keep(compute, item)
            if when is not None:
                self.measured.append(when)
            return out

        bound = min((_concurrency(j) for j in self.judges if not isinstance(j, LexicalJudge)), default=1)
        names = ", ".join(j.name for j in self.judges)
        self.draws: LazyMap[LabelledClaim, ItemRulings] = LazyMap(
            one, self.items, bound, stage=f"judges {names} on {labelled_set}", seconds_of=lambda r: r.seconds)

    @property
    def right_share(self) -> float:
        """The share of items labelled supported (right answers): the design's, over every item."""
        return sum(i.supported for i in self.items) / len(self.items) if self.items else float("nan")

    @property
    def replayed_from(self) -> str | None:
        """When the earliest replayed item was measured; None where every item was ruled now."""
        return min(self.measured, default=None)

    def study_at(self, n: int) -> AgreementStudy:
        """The study of the first `n` items (all where n exceeds them), drawing those not yet drawn."""
        rulings = self.draws.upto(n)
        return agreement_of(self.judges, self.items[:len(rulings)], rulings, self.labelled_set, seed=self.seed)


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
