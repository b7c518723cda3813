"""Answer accuracy of a RAG pipeline on an open-QA set (queries carrying gold `answers`), paired
between a baseline and a candidate: the measurement behind CRAG-005."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from harness.llm.client import LLMClient, LLMError
from harness.metrics.text import answer_match
from harness.prompts import load_prompts, render
from harness.stats import mcnemar, paired_difference
from harness.types import Query


def plain_rag(llm: LLMClient, retriever, *, k: int = 5) -> Callable[[str], str]:
    """The baseline: top-k retrieval, the same generation prompt CRAG uses, no correction. An LLM error
    propagates (`compare_accuracy` counts it; it is never scored as a wrong answer)."""
    template = load_prompts("crag")["generate"]["user"]

    def answer(query: str) -> str:
        context = " ".join(h.text for h in retriever.retrieve(query, k))
        return llm.complete(render(template, context=context, query=query), max_tokens=128).text

    return answer


@dataclass
class AccuracyComparison:
    """Paired correctness over the queries both arms answered; `errors` are the query ids on which either
    arm's LLM call failed (left out of the pairing, counted in `error_rate`)."""

    baseline: np.ndarray
    candidate: np.ndarray
    errors: list[str] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)  # the paired questions, in order
    responses: list[tuple[str, str]] = field(default_factory=list)  # (baseline, candidate) per paired question

    @property
    def error_rate(self) -> float:
        total = len(self.baseline) + len(self.errors)
        return len(self.errors) / total if total else float("nan")

    @property
    def delta(self) -> float:
        return float(self.candidate.mean() - self.baseline.mean())

    def effect(self, seed: int = 1):
        """The paired accuracy difference with its interval and McNemar mid-p (the verdict's input)."""
        from harness.stats.effect import paired_effect

        return paired_effect(self.candidate.astype(float), self.baseline.astype(float), binary=True, seed=seed)

    def context(self) -> dict:
        diff = paired_difference(self.candidate, self.baseline, seed=1)
        mc = mcnemar(self.candidate.astype(bool), self.baseline.astype(bool))
        return {"n": len(self.baseline), "ci": list(diff.ci), "p_value": mc.p_value,
                "baseline_accuracy": float(self.baseline.mean()), "candidate_accuracy": float(self.candidate.mean()),
                "discordant": [mc.b, mc.c], "error_rate": self.error_rate, "errors": self.errors[:20]}


def compare_accuracy(queries: Sequence[Query], baseline: Callable[[str], str],
                     candidate: Callable[[str], str], *, concurrency: int = 1) -> AccuracyComparison:
    """Answer every query with both systems (up to `concurrency` queries at once, each query's two answers one
    after the other); correct = a gold answer occurs in the output. A query on which either system raises
    `LLMError` is left out of the pairing and listed in `errors`."""
    from harness.parallel import ordered_map

    missing = [q.id for q in queries if not q.metadata.get("answers")]
    if missing:
        raise ValueError(f"queries without gold 'answers': {', '.join(missing[:5])}")

    def both(q: Query) -> tuple[str, str] | None:
        try:
            return baseline(q.text), candidate(q.text)
        except LLMError:
            return None

    pairs = list(zip(queries, ordered_map(both, list(queries), concurrency)))
    answered = [(q, pair) for q, pair in pairs if pair is not None]
    return AccuracyComparison(
        np.array([answer_match(b, q.metadata["answers"]) for q, (b, _) in answered], dtype=float),
        np.array([answer_match(c, q.metadata["answers"]) for q, (_, c) in answered], dtype=float),
        errors=[q.id for q, pair in pairs if pair is None], ids=[q.id for q, _ in answered],
        responses=[pair for _, pair in answered])
