"""Multiple choice with RET: the study's questions (the retail KB's derived MCQ, or a QA set with hallucinated
answers and qrels such as HaluEval), the LLM's pick, and the option scores that blend the pick, lexical support
and (RET on) fingerprint coverage; and the registered `ret` technique, whose MCQ option scores these are
(beside them, since `ret.py` holds the algorithm and `ret_mcq` imports it)."""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Sequence

from harness.config import RetSettings
from harness.metrics._text import answer_match
from harness.prompts import load_prompts, render
from harness.techniques.parsing import parse_letter
from harness.techniques._registry import Technique, TechniqueResult, register_technique
from harness.techniques.ret.triangulation import RET, RetResult, fingerprint_coverage, mcq_blend, synthesis_prompt, tokens
from harness.types import Hit, Query, Trace

LETTERS = "ABCD"


@dataclass(frozen=True)
class RetQuestion:
    """A question of RET's study: its text, its gold answer(s), and what makes a retrieved passage
    answer-relevant (the label gates 2 and 3 rank against)."""

    id: str
    text: str
    answers: tuple[str, ...]
    all_parts: bool = False  # True: `answers` are parts of one answer, all required (retail KB "a; b")
    relevant_ids: frozenset[str] = frozenset()  # judged passages (qrels): a hit is relevant when it is one
    references: tuple[str, ...] = ()  # retail KB: the pages the answer comes from

    def is_relevant(self, hit: Hit) -> bool:
        """A judged passage (qrels), or else a chunk of a referenced page that states (part of) the answer."""
        if self.relevant_ids:
            return hit.id in self.relevant_ids
        return hit.metadata.get("filename") in self.references and any(answer_match(hit.text, a) for a in self.answers)

    def answered_by(self, response: str) -> bool:
        hits = [bool(answer_match(response, a)) for a in self.answers]
        return all(hits) if self.all_parts else any(hits)


MCQ = tuple[RetQuestion, list[str], int]  # (question, options, gold index)


def mcq_items(queries: Sequence[Any], seed: int) -> list[MCQ]:
    """(question, four options, gold index) per retail-KB direct query: the gold answer and three distractors
    drawn from the same fact's other values, shuffled with a generator seeded by `seed` and the query id."""
    from harness.data.retail_kb import CATEGORIES

    facts = {(c.key, f.section): f for c in CATEGORIES for f in c.facts}
    items = []
    for q in queries:
        fact = facts[(q.metadata["category"], q.metadata["section"])]
        rng = random.Random(f"{seed}:{q.query_id}")
        wrong = [fact.answer.format(v=v) for v in fact.values if fact.answer.format(v=v) != q.ground_truth]
        options = rng.sample(wrong, min(3, len(wrong))) + [q.ground_truth]
        rng.shuffle(options)
        items.append((retail_question(q), options, options.index(q.ground_truth)))
    return items


def retail_question(q: Any) -> RetQuestion:
    return RetQuestion(q.query_id, q.query, tuple(p.strip() for p in q.ground_truth.split(";")), all_parts=True,
                       references=tuple(q.context_reference))


def retail_study(inputs: Any, n: int, seed: int) -> tuple[list[MCQ], list[RetQuestion]]:
    """The shipped KB's study: MCQ from its direct queries, open QA from its multi-hop ones (n of each)."""
    mcq = mcq_items([q for q in inputs.queries if q.query_type == "direct"][:n], seed=seed)
    return mcq, [retail_question(q) for q in inputs.queries if q.query_type == "multi_hop"][:n]


def qa_study(ds: Any, n: int, seed: int) -> tuple[list[MCQ], list[RetQuestion]]:
    """A QA set with hallucinated answers and qrels (HaluEval) as RET's study: its first n judged questions as
    four-option MCQ (right answer, hallucinated answer, two right answers of other questions; seeded, answer
    position balanced: `harness.data.qa.mcq_from_qa`), the next n as open QA; a passage is answer-relevant when
    the qrels judge it relevant to the question."""
    from harness.data.qa import mcq_from_qa

    usable = [i for i in ds.items if i.hallucinated_answer and any(g > 0 for g in ds.qrels.get(i.id, {}).values())]
    if len(usable) < 4:
        raise ValueError(f"{ds.name}: RET's study needs at least 4 questions with a hallucinated answer and qrels")

    def question(item: Any) -> RetQuestion:
        rel = frozenset(d for d, g in ds.qrels[item.id].items() if g > 0)
        return RetQuestion(item.id, item.text, tuple(item.answers), relevant_ids=rel)

    first = usable[:max(n, 4)]  # four options need at least four questions
    by_id = {i.id: i for i in first}
    mcq = [(question(by_id[m.id]), m.option_texts, m.answer_index) for m in mcq_from_qa(first, seed=seed)]
    return mcq, [question(i) for i in usable[len(first):len(first) + n]]


def mcq_prompt(question: str, options: Sequence[str], docs: Sequence[Hit], table: str | None) -> str:
    opts = "\n".join(f"{LETTERS[i]}) {o}" for i, o in enumerate(options))
    tail = render(load_prompts("ret")["mcq"]["user"], question=question, options=opts)
    return synthesis_prompt(tail, docs[:5], table)


def parse_choice(text: str) -> int | None:
    """The option letter in a reply (A-D, `parse_letter`: capital and standing alone, so the article "a" is
    not option A), as an index; None when there is none."""
    letter = parse_letter(text, LETTERS)
    return LETTERS.index(letter) if letter else None


def choose(llm, question: str, options: Sequence[str], docs: Sequence[Hit], table: str | None,
           trace: Trace) -> int | None:
    """The LLM's pick among the options, given the evidence (and RET's coverage table where there is one)."""
    return parse_choice(llm.complete(mcq_prompt(question, options, docs, table), max_tokens=8, trace=trace).text)


def lexical_support(option: str, docs: Sequence[Hit]) -> float:
    ot = tokens(option)
    return max((len(ot & tokens(d.text)) / len(ot) for d in docs[:5]), default=0.0) if ot else 0.0


def option_coverage(option: str, res: RetResult) -> float | None:
    """Fingerprint coverage of the hypothesis closest to the option; None when RET did not run."""
    if res.skip_reason or not res.hypotheses:
        return None
    best = max(res.hypotheses, key=lambda h: len(tokens(h.hypothesis) & tokens(option)))
    if not tokens(best.hypothesis) & tokens(option):
        return 0.0
    fps = res.fingerprints.get(best.hypothesis, [])
    return max((fingerprint_coverage(d.text, fps) for d in res.docs), default=0.0)


def option_scores(res: RetResult, options: Sequence[str], pick: int | None, *, weight: float) -> list[float]:
    """mcq_blend(pick, lexical, coverage) per option, with `ret.mcq_fingerprint_weight` as the weight."""
    return [mcq_blend(1.0 if pick == i else 0.0, lexical_support(o, res.docs), option_coverage(o, res), weight)
            for i, o in enumerate(options)]


# ---------------------------------------------------------------- the registered technique
class RetParams(RetSettings):
    k: int = 10
    per_query: int = 10


@register_technique
class RETTechnique(Technique):
    name, role = "ret", "ret"
    summary = "RET: answer hypotheses -> evidence fingerprints -> fingerprint-seeded retrieval (off unless enable_ret)"
    Params, config_section = RetParams, "ret"
    params: RetParams

    def setup(self) -> None:
        p = self.params
        settings = RetSettings(**{k: getattr(p, k) for k in RetSettings.model_fields})
        self.ret = RET(self.services.require("llm"), settings, k=p.k, per_query=p.per_query)

    def _run(self, query: Query, trace: Trace) -> TechniqueResult:
        res = self.ret.select(query.text, self.services.require("retriever"), trace=trace)
        return self.result(query, res.docs, trace, ret=res, skip_reason=res.skip_reason, table=res.table)

    def score_options(self, result: TechniqueResult, options: list[str], pick: int | None) -> list[float]:
        """MCQ option scores: the LLM's pick, lexical support and (RET on) fingerprint coverage, blended with
        `mcq_fingerprint_weight`."""
        return option_scores(result.detail["ret"], options, pick, weight=self.params.mcq_fingerprint_weight)
