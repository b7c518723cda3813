"""Judges: an LLM (any litellm model) or the lexical baseline, ruling on one claim or one answer at a time.

An LLM judge asks `harness/prompts/judge.yaml`'s questions and reads the reply into a pydantic model through
`LLMClient.structured` (one repair asked for on invalid JSON; a bare yes/no is read leniently, for small local
models). A reply that still cannot be read, or a failed call, is a *failed ruling*: None, counted and reported,
never scored as supported or unsupported. Judge calls go through the client's response cache and cassettes; a
client with role "judge" records its tokens and cost apart from the pipeline's.

`LLMJudge.rule` returns a `Ruling`: the verdict and the request that made it. Its `recheck=True` form is the
self-consistency pass (JUDGE-FLIP-RATE): the same claim asked again in the rubric's other wording
(`recheck_prompt`, default `support_recheck`: reworded, claim first, the two replies in the other order) at
`recheck_temperature` (default 0.7, `harness.config.JudgeSettings`), with another seed and the cache bypassed.
`perturbed(first, second)` says whether a re-ruling differed from the first request in anything a re-run can
differ in; a repeat of the first call (same wording, same temperature-0 request, or served from the cache) is not.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any, Protocol

from pydantic import BaseModel

from harness.judge.claims import lexical_support, split_claims
from harness.judge.metrics import faithfulness, hallucination_rate
from harness.prompts import load_prompts, render

__all__ = ["AnswerJudgement", "ClaimItem", "ClaimSupport", "Judge", "LLMJudge", "LexicalJudge", "Relevance",
           "Ruling", "judge_answer", "perturbed"]


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


@dataclass(frozen=True)
class Ruling:
    """One ruling and the request that made it: the prompt sent (a digest of system + user message), its
    wording's key in judge.yaml, temperature, seed, and whether the response cache could answer it."""

    verdict: bool | None
    prompt_key: str
    request: str
    temperature: float
    seed: int | None
    cache: bool


def perturbed(first: Ruling, second: Ruling) -> bool:
    """Whether `second` was a fresh request that could differ from `first`: not answerable from the cache, and
    another prompt, another temperature, or a sampled (temperature > 0) draw with another seed."""
    if second.cache:
        return False
    return (second.request != first.request or second.temperature != first.temperature
            or (second.temperature > 0 and second.seed != first.seed))


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
    """An LLM as judge. `temperature` is the judge's sampling temperature; `rule(..., recheck=True)` rules again
    in the `recheck_prompt` wording at `recheck_temperature`, uncached (the self-consistency pass); None for
    either recheck setting takes `harness.config.JudgeSettings`' default."""

    def __init__(self, llm: Any, *, temperature: float = 0.0, max_tokens: int = 24, max_context_chars: int = 6000,
                 seed: int = 0, recheck_temperature: float | None = None, recheck_prompt: str | None = None):
        from harness.config import JudgeSettings

        defaults = JudgeSettings()
        self.llm, self.temperature, self.max_tokens = llm, temperature, max_tokens
        self.max_context_chars, self.seed = max_context_chars, seed
        self.recheck_temperature = defaults.recheck_temperature if recheck_temperature is None else recheck_temperature
        self.recheck_prompt = recheck_prompt or defaults.recheck_prompt
        self.name = llm.label
        self.prompts = load_prompts("judge")
        entry = self.prompts.get(self.recheck_prompt)
        if not (isinstance(entry, dict) and "user" in entry):
            raise ValueError(f"judge.yaml has no prompt {self.recheck_prompt!r} (with a 'user' template)")

    def recheck_settings(self, seed: int | None) -> dict[str, Any]:
        """What the recheck pass changes, for the report: its wording, temperature and seed; cache bypassed."""
        return {"prompt": self.recheck_prompt, "temperature": self.recheck_temperature, "seed": seed,
                "cache": "bypassed", "first": {"prompt": "support", "temperature": self.temperature}}

    def _ask(self, prompt: str, schema: type[BaseModel], field_name: str, seed: int | None, fresh: bool, *,
             temperature: float | None = None, key: str = "") -> Ruling:
        from harness.llm.client import LLMError

        system = self.prompts["system"]
        temperature = self.temperature if temperature is None else temperature
        seed = self.seed if seed is None else seed
        digest = hashlib.sha1(f"{system}\0{prompt}".encode()).hexdigest()[:16]
        ruling = Ruling(None, key, digest, temperature, seed, not fresh)
        try:
            out = self.llm.structured(prompt, schema, system=system, temperature=temperature,
                                      max_tokens=self.max_tokens, seed=seed, use_cache=not fresh,
                                      lenient=_lenient(field_name, schema))
        except LLMError:  # StructuredOutputError included: a failed ruling
            return ruling
        return Ruling(getattr(out, field_name), key, digest, temperature, seed, not fresh)

    def rule(self, item: ClaimItem, *, seed: int | None = None, fresh: bool = False, recheck: bool = False) -> Ruling:
        """Rule on one claim; `recheck`: in the recheck wording at the recheck temperature, uncached."""
        key = self.recheck_prompt if recheck else "support"
        prompt = render(self.prompts[key]["user"], context=item.context[: self.max_context_chars],
                        question=item.question, claim=item.claim)
        return self._ask(prompt, ClaimSupport, "supported", seed, fresh or recheck,
                         temperature=self.recheck_temperature if recheck else None, key=key)

    def supported(self, item: ClaimItem, *, seed: int | None = None, fresh: bool = False) -> bool | None:
        return self.rule(item, seed=seed, fresh=fresh).verdict

    def relevant(self, question: str, answer: str, *, seed: int | None = None, fresh: bool = False) -> bool | None:
        prompt = render(self.prompts["relevance"]["user"], question=question, answer=answer)
        return self._ask(prompt, Relevance, "relevant", seed, fresh, key="relevance").verdict


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
