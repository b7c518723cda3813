"""Corrective RAG (Yan et al., arXiv:2401.15884): retrieval evaluator, decompose-filter-recompose
refinement, and web-search fallback on INCORRECT / both sources on AMBIGUOUS."""
from __future__ import annotations

import re
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from harness.config import CragConfig
from harness.retrieval.chunking import knowledge_strips
from harness.retrieval.web import LocalWebSearch, SearxngWebSearch, WebSearch  # noqa: F401 - re-exported
from harness.llm.client import LLMClient, LLMError
from harness.prompts import load_prompts, render
from harness.techniques.generation import try_complete
from harness.techniques._registry import Technique, TechniqueResult, register_technique
from harness.types import Hit, Query, Trace

CORRECT, INCORRECT, AMBIGUOUS = "CORRECT", "INCORRECT", "AMBIGUOUS"
# the trace an LLM-judge scorer charges its calls to (set around evaluation and refinement; a scorer keeps the
# plain (query, texts) signature)
_CHARGED: ContextVar[Trace | None] = ContextVar("crag_charged_trace", default=None)


@contextmanager
def charging(trace: Trace | None) -> Iterator[None]:
    """LLM calls a scorer makes inside the block are recorded in `trace`."""
    token = _CHARGED.set(trace)
    try:
        yield
    finally:
        _CHARGED.reset(token)
Scorer = Callable[[str, Sequence[str]], np.ndarray]  # (query, texts) -> relevance in [0, 1]


def reranker_scorer(reranker) -> Scorer:
    """Relevance from a (calibrated) reranker: cross-encoder or the offline MaxSim fallback."""
    return lambda query, texts: np.asarray(reranker.score(query, list(texts)), dtype=np.float64)


def lexical_scorer(*, saturation: int = 3) -> Scorer:
    """A weight-free relevance score: the number of the query's content words a text contains, divided by
    `saturation` and capped at 1 (0.0 for none; 1.0 for `saturation` or more shared words)."""
    from harness.metrics import content_words

    def score(query: str, texts: Sequence[str]) -> np.ndarray:
        q = content_words(query)
        return np.asarray([min(1.0, len(q & content_words(t)) / saturation) for t in texts], dtype=np.float64)

    return score


def llm_judge_scorer(llm: LLMClient, *, max_doc_chars: int = 1500) -> Scorer:
    """Relevance from an LLM judge answering Yes/No: 1.0 for yes, 0.0 for no, nan when the call fails or the
    reply is neither (a failure the evaluator counts, never a made-up middle score)."""
    template = load_prompts("crag")["judge"]["user"]

    def score(query: str, texts: Sequence[str]) -> np.ndarray:
        out = []
        for t in texts:
            try:
                ans = llm.complete(render(template, query=query, document=t[:max_doc_chars]), max_tokens=3,
                                   trace=_CHARGED.get()).text
            except LLMError:
                ans = ""
            m = re.search(r"\b(yes|no)\b", ans.lower())
            out.append(float("nan") if m is None else (1.0 if m.group(1) == "yes" else 0.0))
        return np.asarray(out, dtype=np.float64)

    return score


class RetrievalEvaluator:
    """Scores every (query, document) pair, aggregates by max: >= upper CORRECT, <= lower INCORRECT,
    else AMBIGUOUS (the protocol's §2.1 rule on [0, 1] scores)."""

    def __init__(self, scorer: Scorer, *, upper_threshold: float = 0.7, lower_threshold: float = 0.3):
        if not lower_threshold < upper_threshold:
            raise ValueError("lower_threshold must be below upper_threshold")
        self.scorer, self.upper, self.lower = scorer, upper_threshold, lower_threshold
        self.last_failed = 0  # documents the scorer could not score (nan) in the last evaluation

    def evaluate(self, query: str, documents: Sequence[Hit]) -> tuple[str, float]:
        """The action and the best score over the documents the scorer could score. When it could score none,
        AMBIGUOUS (both sources, the action that assumes least) with a nan confidence; `last_failed` counts."""
        scores = self.scorer(query, [d.text for d in documents]) if documents else np.zeros(0)
        failed = np.isnan(scores)
        self.last_failed = int(failed.sum())
        if len(scores) and failed.all():
            return AMBIGUOUS, float("nan")
        best = float(scores[~failed].max()) if len(scores) else 0.0
        if best >= self.upper:
            return CORRECT, best
        if best <= self.lower:
            return INCORRECT, best
        return AMBIGUOUS, best


@dataclass
class Refinement:
    text: str
    kept: list[str]
    strips: int
    original_tokens: int
    refined_tokens: int
    unscored: int = 0  # strips the scorer could not score (dropped, and counted)


def knowledge_refinement(documents: Sequence[Hit], query: str, scorer: Scorer, *,
                         strip_threshold: float = 0.5, tokenizer=None) -> Refinement:
    """Decompose into strips, keep strips scoring >= strip_threshold, recompose in document order."""
    from harness.retrieval.chunking import default_tokenizer

    tok = tokenizer or default_tokenizer()
    strips = [s for d in documents for s in knowledge_strips(d.text)]
    scores = scorer(query, strips) if strips else np.zeros(0)
    kept = [s for s, sc in zip(strips, scores) if sc >= strip_threshold]  # an unscored (nan) strip is not kept
    text = " ".join(kept)
    original = sum(len(tok.encode(d.text)) for d in documents)
    return Refinement(text, kept, len(strips), original, len(tok.encode(text)) if text else 0,
                      unscored=int(np.isnan(scores).sum()))


@dataclass
class CragResult:
    answer: str
    action: str
    confidence: float
    context: str
    sources: list[Hit]
    refinement: Refinement | None
    trace: Trace = field(default_factory=Trace)


class CRAG:
    def __init__(self, retriever, web: WebSearch, evaluator: RetrievalEvaluator, llm: LLMClient | None, *,
                 strip_scorer: Scorer | None = None, strip_threshold: float = 0.5, k: int = 5,
                 max_web_results: int = 10, ambiguous_web_results: int = 5):
        self.retriever, self.web, self.evaluator, self.llm = retriever, web, evaluator, llm
        self.strip_scorer = strip_scorer or evaluator.scorer
        self.strip_threshold, self.k, self.max_web_results = strip_threshold, k, max_web_results
        self.ambiguous_web_results = ambiguous_web_results  # the protocol's §2.3: 10 on INCORRECT, 5 on AMBIGUOUS
        self.template = load_prompts("crag")["generate"]["user"]

    def correct(self, query: str, docs: list[Hit], trace: Trace) -> tuple[str, float, list[Hit]]:
        """Evaluate and take the corrective action; returns (action, confidence, sources)."""
        with trace.stage("crag_evaluate"), charging(trace):
            action, conf = self.evaluator.evaluate(query, docs)
        if getattr(self.evaluator, "last_failed", 0):
            trace.event("crag_fallback", reason="the evaluator could not score every document",
                        failed=self.evaluator.last_failed, of=len(docs))
        trace.event("crag", action=action, confidence=conf)
        corpus = [Hit(h.id, h.score, h.text, {**h.metadata, "source": h.metadata.get("source", "corpus")}) for h in docs]
        if action == CORRECT:
            return action, conf, corpus
        with trace.stage("web_search"):
            n = self.max_web_results if action == INCORRECT else self.ambiguous_web_results
            web = self.web.search(query, num_results=n)
        trace.event("web_search", results=len(web))
        return action, conf, (web if action == INCORRECT else corpus + web)

    def run(self, query: str, trace: Trace | None = None, *, generate: bool = True) -> CragResult:
        trace = trace if trace is not None else Trace()
        with trace.stage("retrieve"):
            docs = self.retriever.retrieve(query, self.k)
        action, conf, sources = self.correct(query, docs, trace)
        with trace.stage("refine"), charging(trace):
            ref = knowledge_refinement(sources, query, self.strip_scorer, strip_threshold=self.strip_threshold)
        answer = ""
        if generate and self.llm is not None:
            with trace.stage("generate"):
                answer = (try_complete(self.llm, render(self.template, context=ref.text, query=query), max_tokens=128,
                                       trace=trace, error_event="generate_error") or "").strip()
        return CragResult(answer, action, conf, ref.text, sources, ref, trace)


# ---------------------------------------------------------------- the registered technique
class CragParams(CragConfig):
    k: int = 5
    max_web_results: int = 10
    ambiguous_web_results: int = 5
    generate: bool = True


def crag_scorer(params: CragConfig, services) -> Any:
    """`crag.scorer`: the (calibrated) reranker, or an LLM judge answering yes/no."""
    if params.scorer == "llm":
        return llm_judge_scorer(services.require("llm"))
    return reranker_scorer(services.require("reranker"))


@register_technique
class CRAGTechnique(Technique):
    name, role = "crag", "crag"
    summary = "Corrective RAG: evaluate retrieval, refine, fall back to web search (Yan et al. 2024)"
    Params, config_section = CragParams, "wsop.crag"
    params: CragParams

    def setup(self) -> None:
        p, s = self.params, self.services
        evaluator = RetrievalEvaluator(crag_scorer(p, s), upper_threshold=p.upper_threshold,
                                       lower_threshold=p.lower_threshold)
        self.crag = CRAG(s.require("retriever"), s.require("web"), evaluator, s.require("llm") if p.generate else None,
                         strip_threshold=p.strip_threshold, k=p.k, max_web_results=p.max_web_results,
                         ambiguous_web_results=p.ambiguous_web_results)

    def _run(self, query: Query, trace: Trace) -> TechniqueResult:
        res = self.crag.run(query.text, trace, generate=self.params.generate)
        return self.result(query, res.sources, trace, res.answer if self.params.generate else None,
                           action=res.action, confidence=res.confidence, context=res.context,
                           refinement=res.refinement)
