"""RET: Retrograde Evidence Triangulation (ret-retrograde-evidence-triangulation).

A cheap LLM proposes K candidate answers; each becomes 3-5 atomic "evidence fingerprints" (facts
that would have to be true); fingerprints become retrieval queries; documents are scored by how many
fingerprints they cover and blended with the existing relevance (0.65 / 0.35); a compact
HYPOTHESIS EVIDENCE COVERAGE table is prepended to the synthesis prompt; MCQ options blend
0.55 LLM + 0.25 lexical + 0.20 coverage. Off by default; every skip has a logged reason.
"""
from __future__ import annotations

import json
import logging
import re
import time
from dataclasses import dataclass, field
from typing import Sequence

from pydantic import BaseModel, ValidationError

from harness.config import ModelPrice, RetSettings
from harness.llm.client import LLMClient, extract_json
from harness.parallel import ordered_map
from harness.prompts import load_prompts, render
from harness.techniques.generation import try_complete
from harness.metrics._text import CONTENT_STOPWORDS
from harness.techniques.parsing import clean_item
from harness.types import Hit, Trace

log = logging.getLogger("rag_harness.ret")
COVERAGE_HEADER = "HYPOTHESIS EVIDENCE COVERAGE"
# the proposal's fixed numbers that it gives no setting (docs/source-defaults.md)
MIN_FINGERPRINT_TOKENS = 2  # a fingerprint is found in a document holding at least 2 of its tokens
MIN_TOTAL_FINGERPRINTS = 2  # fewer fingerprints over all hypotheses: RET is skipped as a parse failure
FOCUS_TERMS = 2  # a fingerprint query carries the question's top 2 focus terms
_TOKEN = re.compile(r"[a-z0-9]+(?:\.[0-9]+)?")


RETConfig = RetSettings  # the typed configuration section `ret:` (harness.config)


class Hypothesis(BaseModel):
    hypothesis: str
    justification: str = ""


def tokens(text: str) -> set[str]:
    """Lower-case word/number tokens without stopwords (the coverage tokenizer)."""
    return {t for t in _TOKEN.findall(text.lower()) if t not in CONTENT_STOPWORDS}


# ---------------------------------------------------------------- hypotheses and fingerprints
def _parse_hypotheses(text: str) -> list[Hypothesis]:
    try:
        data = json.loads(extract_json(text))
        items = data if isinstance(data, list) else data.get("hypotheses", [data])
        out = []
        for it in items:
            if isinstance(it, str):
                out.append(Hypothesis(hypothesis=it))
            elif isinstance(it, dict):
                out.append(Hypothesis.model_validate({k: v for k, v in it.items() if k in ("hypothesis", "justification")}))
        return [h for h in out if h.hypothesis.strip()]
    except (ValueError, ValidationError, AttributeError):
        pass
    out = []
    for line in text.splitlines():
        item = clean_item(line)
        if not item or len(item) < 2:
            continue
        parts = re.split(r"\s+(?:-|—|:|because|since)\s+", item, maxsplit=1)
        out.append(Hypothesis(hypothesis=parts[0].strip(), justification=parts[1].strip() if len(parts) > 1 else ""))
    return out


def generate_hypotheses(question: str, llm: LLMClient, n: int = 3, trace: Trace | None = None,
                        prompt_variant: str = "chat") -> list[Hypothesis]:
    """Up to n candidate answers with one-sentence justifications; [] on failure or empty output."""
    trace = trace if trace is not None else Trace()
    prompt = render(load_prompts("ret")[prompt_variant]["hypotheses"], question=question, n=n)
    with trace.stage("ret_hypotheses"):
        completion = prompt_variant == "completion"  # the list ends at the first blank line
        text = try_complete(llm, prompt, max_tokens=200, stop=["\n\n"] if completion else None, trace=trace,
                            error_event="ret_llm_error")
        if text is None:
            return []
        if completion:
            text = "1. " + text.strip("\n").split("\n\n")[0]
    seen, out = set(), []
    for h in _parse_hypotheses(text):
        key = h.hypothesis.lower().strip()
        if key and key not in seen and key not in question.lower():
            seen.add(key)
            out.append(h)
    return out[:n]


def _fallback_fingerprints(text: str) -> list[str]:
    quoted = re.findall(r'"([^"\n]{8,})"', text)
    if quoted:
        return quoted
    return [clean_item(ln) for ln in text.splitlines() if re.match(r"^\s*(?:[-*•]|\d+[.)])\s+", ln) and clean_item(ln)]


def extract_fingerprints(hypotheses: Sequence[Hypothesis], question: str, llm: LLMClient, k: int = 4,
                         trace: Trace | None = None, prompt_variant: str = "chat") -> dict[str, list[str]]:
    """For each hypothesis, k atomic facts that would have to be true. `chat`: one batched JSON call, with
    a fallback parser for quoted strings or bullet lines (distributed over hypotheses in order).
    `completion`: one few-shot call per hypothesis, read as a bullet list."""
    trace = trace if trace is not None else Trace()
    if not hypotheses:
        return {}
    if prompt_variant == "completion":
        return _fingerprints_per_hypothesis(hypotheses, question, llm, k, trace)
    listing = "\n".join(f"- {h.hypothesis}" for h in hypotheses)
    prompt = render(load_prompts("ret")["chat"]["fingerprints"], question=question, k=k, hypotheses=listing)
    with trace.stage("ret_fingerprints"):
        text = try_complete(llm, prompt, max_tokens=320, trace=trace, error_event="ret_llm_error")
        if text is None:
            return {}
    names = [h.hypothesis for h in hypotheses]
    try:
        data = json.loads(extract_json(text))
        if isinstance(data, dict):
            out: dict[str, list[str]] = {}
            for key, facts in data.items():
                match = next((n for n in names if n.lower() == str(key).lower()), None) or \
                    next((n for n in names if str(key).lower() in n.lower() or n.lower() in str(key).lower()), None)
                if match and isinstance(facts, list):
                    out[match] = [str(f).strip() for f in facts if str(f).strip()][:k]
            if out:
                return out
    except ValueError:
        pass
    facts = _fallback_fingerprints(text)
    out = {}
    for i, f in enumerate(facts[: k * len(names)]):
        out.setdefault(names[min(i // k, len(names) - 1)], []).append(f)
    return out


def _fingerprints_per_hypothesis(hypotheses: Sequence[Hypothesis], question: str, llm: LLMClient, k: int,
                                 trace: Trace) -> dict[str, list[str]]:
    template = load_prompts("ret")["completion"]["fingerprints"]

    def ask(h: Hypothesis) -> str | None:
        return try_complete(llm, render(template, question=question, hypothesis=h.hypothesis), max_tokens=96,
                            stop=["\n\n"], trace=trace, error_event="ret_llm_error")

    out: dict[str, list[str]] = {}
    with trace.stage("ret_fingerprints"):
        # one call per hypothesis, side by side up to the client's concurrency bound (1 for a local model)
        texts = ordered_map(ask, hypotheses, getattr(llm, "concurrency", 1))
        for h, text in zip(hypotheses, texts):
            if text is None:
                continue
            facts: list[str] = []
            for line in ("- " + text.split("\n\n")[0]).splitlines():
                fact = clean_item(line)
                matchable = len(tokens(fact)) >= MIN_FINGERPRINT_TOKENS  # fewer tokens can never be found
                if fact and matchable and fact.lower() not in {f.lower() for f in facts}:
                    facts.append(fact)
            if facts:
                out[h.hypothesis] = facts[:k]
    return out


# ---------------------------------------------------------------- scoring and prompts
def fingerprint_coverage(text: str, fingerprints: Sequence[str]) -> float:
    """Fraction of fingerprints with at least MIN_FINGERPRINT_TOKENS (2) of their tokens in the document's
    title+text."""
    if not fingerprints:
        return 0.0
    doc = tokens(text)
    return sum(len(tokens(f) & doc) >= MIN_FINGERPRINT_TOKENS for f in fingerprints) / len(fingerprints)


def blended_relevance(existing: float, coverage: float, weight: float = 0.35) -> float:
    """(1 - w) * existing + w * coverage; w = 0.35 gives the proposal's 0.65 / 0.35."""
    return (1.0 - weight) * existing + weight * coverage


def fingerprint_queries(fingerprints: dict[str, list[str]], focus_terms: Sequence[str] = (),
                        max_queries: int = 6) -> list[str]:
    """Fingerprints as queries (round-robin over hypotheses), each joined with the top FOCUS_TERMS (2) focus
    terms."""
    lists = [list(v) for v in fingerprints.values()]
    flat: list[str] = []
    i = 0
    while any(lists) and len(flat) < max_queries:
        if lists[i % len(lists)]:
            flat.append(lists[i % len(lists)].pop(0))
        i += 1
    focus = " ".join(focus_terms[:FOCUS_TERMS])
    return [f"{f} {focus}".strip() for f in flat]


def focus_terms(question: str, n: int = FOCUS_TERMS) -> list[str]:
    """The question's longest content words (a simple stand-in for decomposition focus terms)."""
    return sorted(tokens(question), key=lambda t: (-len(t), t))[:n]


def build_retrieval_plan(question: str, fingerprints: dict[str, list[str]], config: RETConfig,
                         base: dict[str, list[str]] | None = None) -> dict[str, list[str]]:
    """The retrieval plan by intent; `fingerprint_queries` is added only when RET is on and fingerprints exist."""
    plan = dict(base or {"primary": [question]})
    if config.enable_ret and any(fingerprints.values()):
        plan["fingerprint_queries"] = fingerprint_queries(fingerprints, focus_terms(question),
                                                          config.max_fingerprint_queries)
    return plan


def coverage_table(hypotheses: Sequence[Hypothesis], fingerprints: dict[str, list[str]], docs: Sequence[Hit],
                   *, max_tokens: int = 400, passage_chars: int = 60) -> str:
    """Per hypothesis: fingerprints found in the evidence / total, and the top passage (`passage_chars`
    characters) per found fingerprint; truncated to stay under `max_tokens` whitespace tokens."""
    lines = [COVERAGE_HEADER, "(a weak prior: retrieved evidence may contradict it)"]
    for h in hypotheses:
        fps = fingerprints.get(h.hypothesis, [])
        found = []
        for f in fps:
            best = max(docs, key=lambda d: len(tokens(f) & tokens(d.text)), default=None)
            if best is not None and len(tokens(f) & tokens(best.text)) >= MIN_FINGERPRINT_TOKENS:
                found.append((f, best.text[:passage_chars].replace("\n", " ")))
        lines.append(f"- {h.hypothesis}: {len(found)}/{len(fps)} fingerprints found")
        lines.extend(f"  * {f[:80]} <- \"{p}\"" for f, p in found)
    out: list[str] = []
    for ln in lines:
        if sum(len(x.split()) for x in out) + len(ln.split()) > max_tokens:
            break
        out.append(ln)
    return "\n".join(out)


def synthesis_prompt(question: str, evidence: Sequence[Hit], table: str | None = None) -> str:
    numbered = "\n".join(f"[{i}] {d.text[:500]}" for i, d in enumerate(evidence, 1))
    head = (f"{table}\nUse the table above as a primary reasoning anchor, then check it against the evidence.\n\n"
            if table else "")
    return f"{head}Evidence:\n{numbered}\n\nQuestion: {question}\nAnswer:"


def mcq_blend(llm_net: float, lexical: float, coverage: float | None, weight: float = 0.20) -> float:
    """0.55 llm + 0.25 lexical + 0.20 coverage at weight 0.20; the original 0.7 llm + 0.3 lexical when the
    weight is 0 or there is no coverage. The weight is taken from llm and lexical in a 3:1 ratio."""
    if coverage is None or weight == 0.0:
        return 0.7 * llm_net + 0.3 * lexical
    return (0.7 - 0.75 * weight) * llm_net + (0.3 - 0.25 * weight) * lexical + weight * coverage


# ---------------------------------------------------------------- the RET stage
@dataclass
class RetResult:
    question: str
    hypotheses: list[Hypothesis]
    fingerprints: dict[str, list[str]]
    plan: dict[str, list[str]]
    docs: list[Hit]
    table: str | None
    skip_reason: str | None
    ret_seconds: float = 0.0
    ret_prompt_tokens: int = 0
    ret_completion_tokens: int = 0
    ret_cost_usd: float = 0.0
    ret_unpriced_calls: int = 0
    trace: Trace = field(default_factory=Trace)

    @property
    def all_fingerprints(self) -> list[str]:
        return [f for fs in self.fingerprints.values() for f in fs]


class RET:
    """`select(question, retriever)`: the RET-aware retrieval (or the plain one with a skip reason)."""

    def __init__(self, llm: LLMClient, config: RETConfig = RETConfig(), *, k: int = 10, per_query: int = 10):
        self.llm, self.config, self.k, self.per_query = llm, config, k, per_query

    def estimate_cost(self) -> float | None:
        """Upper estimate of the RET calls (about 1,200 prompt and 520 completion tokens) at the model's price:
        the price declared in config, else litellm's; None when neither knows the model."""
        price = getattr(self.llm, "price", None)
        if price is None:
            try:
                from harness.llm._litellm import litellm

                info = litellm().get_model_info(self.llm.model)
            except Exception:  # noqa: BLE001 - litellm raises for a model it does not know
                return None
            price = ModelPrice(input_per_mtok=float(info.get("input_cost_per_token") or 0) * 1e6,
                               output_per_mtok=float(info.get("output_cost_per_token") or 0) * 1e6)
        return price.cost(1200, 520)

    def select(self, question: str, retriever, *, spent_usd: float | None = None,
               trace: Trace | None = None) -> RetResult:
        """`spent_usd`: what this question's run has spent before RET, against `max_cost_usd` (None: the cost the
        question's trace has recorded so far, e.g. a WSOP pipeline's earlier stages). The proposal's guard skips
        RET "if remaining run budget is insufficient", a run there being one question (its §risks)."""
        trace = trace if trace is not None else Trace()
        with trace.stage("retrieve_primary"):
            primary = retriever.retrieve(question, self.k)
        base = RetResult(question, [], {}, {"primary": [question]}, primary, None, None, trace=trace)

        def skip(reason: str) -> RetResult:
            base.skip_reason = reason
            trace.event("ret_skipped", reason=reason)
            log.info("ret_skipped_reason: %s (%s)", reason, question[:80])
            return base

        if not self.config.enable_ret:
            return skip("disabled")
        estimate = self.estimate_cost()
        if estimate is None:  # an unpriced model: the guard can only see a spent budget; never read it as free
            trace.event("ret_cost_unknown", model=getattr(self.llm, "label", "?"))
        spent = trace.cost_usd if spent_usd is None else spent_usd
        remaining = self.config.max_cost_usd - spent
        if remaining <= 0 or (estimate is not None and estimate > remaining):
            trace.event("ret_budget", spent_usd=spent, max_cost_usd=self.config.max_cost_usd, estimate_usd=estimate)
            return skip("budget")
        t0, calls0 = time.perf_counter(), (trace.prompt_tokens, trace.completion_tokens, trace.cost_usd,
                                           trace.unpriced_calls)
        hyps = generate_hypotheses(question, self.llm, self.config.n_hypotheses, trace,
                                   prompt_variant=self.config.prompt_variant)
        if not hyps or all(len(h.justification.split()) < self.config.min_justification_tokens for h in hyps):
            base.hypotheses = hyps
            self._account(base, t0, calls0)
            return skip("low_quality_hypotheses")
        fps = extract_fingerprints(hyps, question, self.llm, self.config.fingerprints_per_hypothesis, trace,
                                   prompt_variant=self.config.prompt_variant)
        total = sum(len(v) for v in fps.values())
        base.hypotheses, base.fingerprints = hyps, fps
        self._account(base, t0, calls0)
        if total < MIN_TOTAL_FINGERPRINTS:
            return skip("parse_failure")
        plan = build_retrieval_plan(question, fps, self.config)
        with trace.stage("retrieval_round_fingerprint"):
            extra = retriever.retrieve_many(plan["fingerprint_queries"], self.per_query)
        pool: dict[str, Hit] = {h.id: h for h in primary}
        for hits in extra:
            for h in hits:
                pool.setdefault(h.id, h)
        fingerprints, scored = base.all_fingerprints, []
        for h in pool.values():
            cov = fingerprint_coverage(h.text, fingerprints)
            rel = blended_relevance(h.score, cov, self.config.coverage_weight)
            scored.append(Hit(h.id, rel, h.text, {**h.metadata, "coverage": cov, "existing_score": h.score}))
        scored.sort(key=lambda h: (-h.score, h.id))
        base.plan, base.docs = plan, scored[: self.k]
        base.table = coverage_table(hyps, fps, base.docs, max_tokens=self.config.table_max_tokens)
        trace.event("ret", hypotheses=len(hyps), fingerprints=total)
        return base

    @staticmethod
    def _account(res: RetResult, t0: float, before: tuple[int, int, float, int]) -> None:
        t = res.trace
        res.ret_seconds = time.perf_counter() - t0
        res.ret_prompt_tokens = t.prompt_tokens - before[0]
        res.ret_completion_tokens = t.completion_tokens - before[1]
        res.ret_cost_usd = t.cost_usd - before[2]
        res.ret_unpriced_calls = t.unpriced_calls - before[3]
