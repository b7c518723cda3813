"""Answer accuracy of a RAG pipeline on an open-QA set (queries carrying gold `answers`), paired
between a baseline and a candidate: the measurement behind CRAG-005."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from harness.llm.client import LLMClient, LLMError
from harness.metrics._text import answer_match
from harness.prompts import load_prompts, render
from harness.stats import mcnemar, paired_difference
from harness.types import Query


def plain_rag(llm: LLMClient, retriever, *, k: int = 5) -> Callable[[str], str]:
    """The baseline: top-k retrieval, the same generation prompt CRAG uses, no correction. An LLM error
    propagates (`compare_accuracy` counts it as the arm's failure)."""
    template = load_prompts("crag")["generate"]["user"]

    def answer(query: str) -> str:
        context = " ".join(h.text for h in retriever.retrieve(query, k))
        return llm.complete(render(template, context=context, query=query), max_tokens=128).text

    return answer


ARMS = ("baseline", "candidate")


@dataclass
class AccuracyComparison:
    """Paired correctness over every query asked. An arm whose LLM call failed on a query scores that query as
    a failure of the arm (it stays in the pairing: a technique that errors does not answer) and is listed in
    `errors[arm]`; `error_rate` is the share of queries on which either arm failed, which withholds 'supported'
    like a fallback (harness.stats._verdict.MAX_FALLBACK_RATE)."""

    baseline: np.ndarray
    candidate: np.ndarray
    errors: dict[str, list[str]] = field(default_factory=lambda: {a: [] for a in ARMS})
    ids: list[str] = field(default_factory=list)  # the questions, in order
    responses: list[tuple[str | None, str | None]] = field(default_factory=list)  # None: that arm's call failed

    @property
    def failed_ids(self) -> set[str]:
        return set(self.errors["baseline"]) | set(self.errors["candidate"])

    @property
    def error_rate(self) -> float:
        return len(self.failed_ids) / len(self.ids) if self.ids else float("nan")

    @property
    def delta(self) -> float:
        return float(self.candidate.mean() - self.baseline.mean())

    def head(self, n: int) -> "AccuracyComparison":
        """The comparison over the first n questions (a sequential look)."""
        ids = set(self.ids[:n])
        return AccuracyComparison(self.baseline[:n], self.candidate[:n],
                                  {a: [q for q in e if q in ids] for a, e in self.errors.items()},
                                  self.ids[:n], self.responses[:n])

    def effect(self, seed: int = 1, *, confidence: float = 0.95):
        """The paired accuracy difference with its interval and McNemar mid-p (the verdict's input)."""
        from harness.stats._effect import paired_effect

        return paired_effect(self.candidate.astype(float), self.baseline.astype(float), binary=True, seed=seed,
                             confidence=confidence)

    def context(self) -> dict:
        diff = paired_difference(self.candidate, self.baseline, seed=1)
        mc = mcnemar(self.candidate.astype(bool), self.baseline.astype(bool))
        return {"n": len(self.baseline), "ci": list(diff.ci), "p_value": mc.p_value,
                "baseline_accuracy": float(self.baseline.mean()), "candidate_accuracy": float(self.candidate.mean()),
                "discordant": [mc.b, mc.c], "error_rate": self.error_rate,
                "errors": {a: e[:20] for a, e in self.errors.items()}}


def _answer_or_none(fn: Callable[[str], str], text: str) -> str | None:
    try:
        return fn(text)
    except LLMError:
        return None


def compare_accuracy(queries: Sequence[Query], baseline: Callable[[str], str],
                     candidate: Callable[[str], str], *, concurrency: int = 1) -> AccuracyComparison:
    """Answer every query with both systems (up to `concurrency` queries at once, each query's two answers one
    after the other); correct = a gold answer occurs in the output. A system that raises `LLMError` on a query
    fails it (scored 0 for that arm, listed in `errors`)."""
    from harness.parallel import ordered_map

    missing = [q.id for q in queries if not q.metadata.get("answers")]
    if missing:
        raise ValueError(f"queries without gold 'answers': {', '.join(missing[:5])}")

    def both(q: Query) -> tuple[str | None, str | None]:
        return _answer_or_none(baseline, q.text), _answer_or_none(candidate, q.text)

    pairs = list(zip(queries, ordered_map(both, list(queries), concurrency)))

    def correct(k: int) -> np.ndarray:
        return np.array([(a := r[k]) is not None and answer_match(a, q.metadata["answers"]) for q, r in pairs],
                        dtype=float)

    return AccuracyComparison(correct(0), correct(1),
                              {arm: [q.id for q, r in pairs if r[k] is None] for k, arm in enumerate(ARMS)},
                              [q.id for q, _ in pairs], [r for _, r in pairs])


class IncrementalComparison:
    """`compare_accuracy` drawn in looks: `upto(n)` answers only the questions not yet asked."""

    def __init__(self, queries: Sequence[Query], baseline: Callable[[str], str], candidate: Callable[[str], str], *,
                 concurrency: int = 1):
        self.queries, self.baseline, self.candidate, self.concurrency = list(queries), baseline, candidate, concurrency
        self._done: AccuracyComparison | None = None

    def upto(self, n: int) -> AccuracyComparison:
        have = len(self._done.ids) if self._done is not None else 0
        if n > have:
            more = compare_accuracy(self.queries[have:n], self.baseline, self.candidate, concurrency=self.concurrency)
            if self._done is None:
                self._done = more
            else:
                d = self._done
                self._done = AccuracyComparison(np.concatenate([d.baseline, more.baseline]),
                                                np.concatenate([d.candidate, more.candidate]),
                                                {a: d.errors[a] + more.errors[a] for a in ARMS},
                                                d.ids + more.ids, d.responses + more.responses)
        assert self._done is not None
        return self._done.head(n)
