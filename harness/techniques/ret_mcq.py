"""Multiple choice with RET: options derived from the retail KB's facts, the LLM's pick, and the option
scores that blend the pick, lexical support and (RET on) fingerprint coverage."""
from __future__ import annotations

import random
import re
from typing import Any, Sequence

from harness.metrics.text import answer_match
from harness.prompts import load_prompts, render
from harness.techniques.ret import RetResult, fingerprint_coverage, mcq_blend, synthesis_prompt, tokens
from harness.types import Hit, Trace

LETTERS = "ABCD"


def mcq_items(queries: Sequence[Any], seed: int) -> list[tuple[Any, list[str], int]]:
    """(query, four options, gold index) per retail-KB direct query: the gold answer and three distractors
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
        items.append((q, options, options.index(q.ground_truth)))
    return items


def answer_relevant(hit: Hit, q: Any) -> bool:
    """A chunk of a referenced page that states (part of) the gold answer."""
    parts = [p.strip() for p in q.ground_truth.split(";")]
    return hit.metadata.get("filename") in q.context_reference and any(answer_match(hit.text, p) for p in parts)


def mcq_prompt(question: str, options: Sequence[str], docs: Sequence[Hit], table: str | None) -> str:
    opts = "\n".join(f"{LETTERS[i]}) {o}" for i, o in enumerate(options))
    tail = render(load_prompts("ret")["mcq"]["user"], question=question, options=opts)
    return synthesis_prompt(tail, docs[:5], table)


def parse_choice(text: str) -> int | None:
    """The option letter in a reply (A-D), as an index; None when there is none."""
    m = re.search(r"\b([ABCD])\b", text.upper())
    return LETTERS.index(m.group(1)) if m else None


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
