"""Judges: an LLM (any litellm model) or the lexical baseline, ruling on one claim or one answer at a time.

An LLM judge asks `harness/prompts/judge.yaml`'s questions and reads the reply into a pydantic model through
`LLMClient.structured` (one repair asked for on invalid JSON; a bare yes/no is read leniently, for small local
models). A reply that still cannot be read, or a failed call, is a *failed ruling*: None, counted and reported,
never scored as supported or unsupported. Judge calls go through the client's response cache and cassettes; a
client with role "judge" records its tokens and cost apart from the pipeline's.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Protocol

from pydantic import BaseModel

from harness.judge.claims import lexical_support, split_claims
from harness.judge.metrics import faithfulness, hallucination_rate
from harness.prompts import load_prompts, render

__all__ = ["AnswerJudgement", "ClaimItem", "ClaimSupport", "Judge", "LLMJudge", "LexicalJudge", "Relevance",
           "judge_answer"]


class ClaimSupport(BaseModel):
    supported: bool


class Relevance(BaseModel):
    relevant: bool


def _lenient(field_name: str, model: type[BaseModel]):
    """Read a reply that is not JSON: a leading yes/no (true/false), or the field's word in its first line
    ("The claim is fully supported" → True; "not supported", "unsupported" → False). Anything else: None."""
    word = re.escape(field_name)
    no = re.compile(rf"^\W*(no|false)\b|(\bnot|n't|\bnever)\s+(\w+\s+)?{word}\b|\b(un{word}|ir{word})\b", re.I)
    yes = re.compile(rf"^\W*(yes|true)\b|\b{word}\b", re.I)

    def read(text: str) -> BaseModel | None:
        head = text.strip().split("\n", 1)[0][:300]
        if no.search(head):
            return model(**{field_name: False})
        if yes.search(head):
            return model(**{field_name: True})
        return None

    return read


@dataclass(frozen=True)
class ClaimItem:
    """One claim to rule on: the question it answers and the context it must be supported by."""

    question: str
    context: str
    claim: str


class Judge(Protocol):
    name: str

    def supported(self, item: ClaimItem, *, seed: int | None = None, fresh: bool = False) -> bool | None: ...


class LexicalJudge:
    """The judge-free baseline (`harness.judge.claims.lexical_support`); it never fails and never flips."""

    name = "lexical"
    temperature = None

    def __init__(self, *, min_overlap: float = 0.75):
        self.min_overlap = min_overlap

    def supported(self, item: ClaimItem, *, seed: int | None = None, fresh: bool = False) -> bool | None:
        return lexical_support(item.claim, item.context, min_overlap=self.min_overlap)

    def relevant(self, question: str, answer: str, **_: Any) -> bool | None:
        return None  # relevance has no lexical baseline here


class LLMJudge:
    """An LLM as judge. `temperature` is the judge's sampling temperature; `seed` varies a ruling (the
    self-consistency pass rules again with another seed and `fresh=True`, bypassing the response cache)."""

    def __init__(self, llm: Any, *, temperature: float = 0.0, max_tokens: int = 24, max_context_chars: int = 6000,
                 seed: int = 0):
        self.llm, self.temperature, self.max_tokens = llm, temperature, max_tokens
        self.max_context_chars, self.seed = max_context_chars, seed
        self.name = llm.label
        self.prompts = load_prompts("judge")

    def _ask(self, prompt: str, schema: type[BaseModel], field_name: str, seed: int | None, fresh: bool) -> Any:
        from harness.llm.client import LLMError

        try:
            out = self.llm.structured(prompt, schema, system=self.prompts["system"], temperature=self.temperature,
                                      max_tokens=self.max_tokens, seed=self.seed if seed is None else seed,
                                      use_cache=not fresh, lenient=_lenient(field_name, schema))
        except LLMError:  # StructuredOutputError included: a failed ruling
            return None
        return getattr(out, field_name)

    def supported(self, item: ClaimItem, *, seed: int | None = None, fresh: bool = False) -> bool | None:
        prompt = render(self.prompts["support"]["user"], context=item.context[: self.max_context_chars],
                        question=item.question, claim=item.claim)
        return self._ask(prompt, ClaimSupport, "supported", seed, fresh)

    def relevant(self, question: str, answer: str, *, seed: int | None = None, fresh: bool = False) -> bool | None:
        prompt = render(self.prompts["relevance"]["user"], question=question, answer=answer)
        return self._ask(prompt, Relevance, "relevant", seed, fresh)


@dataclass
class AnswerJudgement:
    """An answer's claims and the judge's ruling on each (None: a failed ruling, left out of the scores)."""

    claims: list[str]
    verdicts: list[bool | None]
    judge: str
    claims_cut: int = 0  # claims beyond max_claims, not judged
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ruled(self) -> list[bool]:
        return [v for v in self.verdicts if v is not None]

    @property
    def failures(self) -> int:
        return sum(v is None for v in self.verdicts)

    @property
    def faithfulness(self) -> float:
        return faithfulness(self.ruled)

    @property
    def hallucination_rate(self) -> float:
        return hallucination_rate(self.ruled)


def judge_answer(judge: Judge, question: str, context: str, answer: str, *, max_claims: int | None = 8,
                 seed: int | None = None, fresh: bool = False) -> AnswerJudgement:
    """Split the answer into claims and rule on each against the context. An abstention (`harness.metrics.qa.
    is_abstention`) states nothing about the world: no claims, faithfulness undefined (nan)."""
    from harness.metrics.qa import is_abstention

    if is_abstention(answer):
        return AnswerJudgement([], [], judge.name, extra={"abstained": True})
    claims = split_claims(answer)
    kept = claims[:max_claims] if max_claims else claims
    verdicts = [judge.supported(ClaimItem(question, context, c), seed=seed, fresh=fresh) for c in kept]
    return AnswerJudgement(kept, verdicts, judge.name, len(claims) - len(kept))
