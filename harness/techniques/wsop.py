"""The integrated, routed WSOP pipeline (wsop-implementation-specs §5.1): complexity routing over
HyDE, CRAG, RAG-Fusion and query rewriting, credibility tiers on every source, cited answers."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Literal, Sequence, cast

import numpy as np

from harness.config import WSOPConfig
from harness.llm.client import LLMClient
from harness.prompts import load_prompts
from harness.techniques.crag import (
    CORRECT, CRAG, RetrievalEvaluator, WebSearch, charging, crag_scorer, knowledge_refinement,
)
from harness.techniques.generation import complete_with_sources
from harness.techniques.fusion import FusionParams, FusionTechnique, RAGFusion
from harness.techniques.hyde import HyDE, HydeParams, HyDETechnique
from harness.techniques._registry import Technique, TechniqueResult, build_technique, register_technique
from harness.techniques.rewrite import LLMRewriter, RewriteParams, RewriteTechnique
from harness.types import Hit, Query, Trace

LEVELS = ("simple", "moderate", "complex")


class ComplexityClassifier:
    """TF-IDF + logistic regression over labelled example queries. The complexity score is the
    expected level, P(moderate) * 0.5 + P(complex) * 1.0, routed with the protocol's thresholds."""

    def __init__(self, examples: Sequence[tuple[str, str]], *, simple_threshold: float = 0.3,
                 complex_threshold: float = 0.7, seed: int = 0):
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import FeatureUnion, make_pipeline

        labels = {lab for _, lab in examples}
        if labels != set(LEVELS):
            raise ValueError(f"examples must cover exactly {LEVELS}, got {sorted(labels)}")
        feats = FeatureUnion([("w", TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True)),
                              ("c", TfidfVectorizer(analyzer="char_wb", ngram_range=(3, 5), sublinear_tf=True))])
        self.model = make_pipeline(feats, LogisticRegression(C=10.0, max_iter=2000, random_state=seed))
        texts = [self._augment(q) for q, _ in examples]
        self.model.fit(texts, [lab for _, lab in examples])
        self.simple_threshold, self.complex_threshold = simple_threshold, complex_threshold

    @staticmethod
    def _augment(query: str) -> str:
        n = len(query.split())
        length = "len_short" if n <= 7 else "len_medium" if n <= 16 else "len_long"
        clauses = query.count(",") + query.lower().count(" and ") + query.count("?")
        return f"{query} {length} clauses_{min(clauses, 4)}"

    @classmethod
    def from_jsonl(cls, path: str | Path | None = None, **kw) -> "ComplexityClassifier":
        """Train on `{"query", "label"}` lines; default: the labelled examples shipped with the package."""
        text = (Path(path).read_text(encoding="utf-8") if path else
                resources.files("harness.techniques").joinpath("complexity_queries.jsonl").read_text(encoding="utf-8"))
        rows = [json.loads(line) for line in text.splitlines() if line.strip()]
        return cls([(r["query"], r["label"]) for r in rows], **kw)

    def score(self, query: str) -> float:
        probs = dict(zip(self.model.classes_, self.model.predict_proba([self._augment(query)])[0]))
        return float(probs.get("moderate", 0.0) * 0.5 + probs.get("complex", 0.0))

    def classify(self, query: str) -> str:
        s = self.score(query)
        if s < self.simple_threshold:
            return "simple"
        if s > self.complex_threshold:
            return "complex"
        return "moderate"


def credibility_tier(hit: Hit) -> str:
    """high: the curated corpus or official domains; medium: known reference domains; low: other web."""
    if hit.metadata.get("source", "corpus") == "corpus":
        return "high"
    domain = str(hit.metadata.get("domain", "")).lower()
    if domain.endswith((".gov", ".edu", ".int", ".mil")) or ".gov." in domain or ".ac." in domain:
        return "high"
    if domain.endswith(("wikipedia.org", "arxiv.org", "nature.com", "acm.org", "ieee.org", ".org")):
        return "medium"
    return "low"


@dataclass
class SearchResult:
    query: str
    answer: str
    sources: list[Hit]
    complexity: str
    trace: Trace = field(default_factory=Trace)
    degraded: bool = False


class NoWebSearch:
    """The web fallback switched off (`fallback.web_search_on_incorrect: false`): every search returns nothing."""

    calls = 0

    def search(self, query: str, num_results: int = 10) -> list[Hit]:
        return []


class WSOPPipeline:
    """The routed pipeline. It composes the techniques rather than re-implementing them: HyDE's expansion,
    the LLM rewriter, RAG-Fusion's search-and-fuse and CRAG's correction step (CORRECT keeps the corpus,
    INCORRECT replaces it with web results, AMBIGUOUS uses both) and refinement. A component whose
    `enabled` flag is false is skipped on every route (its step is logged as skipped in the trace)."""

    def __init__(self, config: WSOPConfig, llm: LLMClient, retriever, web: WebSearch, evaluator: RetrievalEvaluator,
                 *, embedder, classifier: ComplexityClassifier | None = None, top_k: int = 5,
                 prompt_variant: str = "chat", hyde: HyDE | None = None, fusion: RAGFusion | None = None,
                 rewriter: LLMRewriter | None = None, seed: int = 0):
        self.config, self.llm, self.retriever, self.web, self.evaluator = config, llm, retriever, web, evaluator
        self.top_k = top_k
        h, f, r = config.hyde, config.rag_fusion, config.query_rewriting
        self.hyde = hyde or HyDE(llm, embedder, temperature=h.temperature, max_tokens=h.max_tokens,
                                 num_documents=h.num_documents, include_query=h.include_query,
                                 prompt_variant=prompt_variant)
        self.fusion = fusion or RAGFusion(llm, retriever, num_queries=f.num_queries, rrf_k=f.rrf_k,
                                          top_k_per_query=f.top_k_per_query, final_top_k=f.final_top_k,
                                          temperature=f.temperature, max_tokens=f.max_tokens,
                                          prompt_variant=prompt_variant)
        self.rewriter = rewriter or LLMRewriter(llm, max_tokens=r.max_length, prompt_variant=prompt_variant)
        fb = config.fallback
        self.crag = CRAG(retriever, web if fb.web_search_on_incorrect else NoWebSearch(), evaluator, None,
                         strip_threshold=config.crag.strip_threshold, k=top_k, max_web_results=fb.max_web_results,
                         ambiguous_web_results=fb.ambiguous_web_results)
        self.classifier = classifier or ComplexityClassifier.from_jsonl(
            simple_threshold=config.routing.simple_threshold, complex_threshold=config.routing.complex_threshold,
            seed=seed)
        self.prompts = load_prompts("wsop")["answer"]

    def _skipped(self, component: str, trace: Trace) -> None:
        trace.event("component_disabled", component=component)

    def _expand(self, text: str, trace: Trace):
        """HyDE's vector for `text`, or None when HyDE is disabled."""
        if not self.config.hyde.enabled:
            self._skipped("hyde", trace)
            return None
        return self.hyde.expand(text, trace).vector

    def _retrieve(self, text: str, vector, trace: Trace) -> list[Hit]:
        """Top-k for HyDE's vector, or for the text itself when there is none (HyDE disabled)."""
        with trace.stage("retrieve"):
            if vector is None:
                return self.retriever.retrieve(text, self.top_k)
            return self.retriever.retrieve_vector(vector, self.top_k, query=text)

    def _correct(self, query: str, results: list[Hit], trace: Trace, *, refine: bool) -> list[Hit]:
        """CRAG's correction (and, where asked, its refinement of what is not CORRECT)."""
        if not self.config.crag.enabled:
            self._skipped("crag", trace)
            return results
        action, _conf, sources = self.crag.correct(query, results, trace)
        if refine and action != CORRECT and sources:
            sources = self._refine(query, sources, trace)
        return sources

    def search(self, query: str, complexity: str = "auto", trace: Trace | None = None) -> SearchResult:
        trace = trace if trace is not None else Trace()
        if complexity == "auto":
            with trace.stage("classify"):
                complexity = self.classifier.classify(query) if self.config.routing.auto_classify else "moderate"
        if complexity not in LEVELS:
            raise ValueError(f"complexity must be auto or one of {LEVELS}, got {complexity!r}")
        trace.event("route", complexity=complexity)
        if complexity == "simple":
            with trace.stage("retrieve"):
                results = self.retriever.retrieve(query, self.top_k)
        elif complexity == "moderate":
            vector = self._expand(query, trace)
            results = self._correct(query, self._retrieve(query, vector, trace), trace, refine=False)
        else:
            if self.config.query_rewriting.enabled:
                rewritten = self.rewriter.rewrite(query, trace=trace)
            else:
                self._skipped("query_rewriting", trace)
                rewritten = query
            vector = self._expand(rewritten, trace)
            if self.config.rag_fusion.enabled:
                fused = self.fusion.search_and_fuse([query, rewritten, rewritten], trace,
                                                    vectors=[None, None, vector])
                results = fused.hits[: self.config.rag_fusion.final_top_k]
            else:
                self._skipped("rag_fusion", trace)
                results = self._retrieve(rewritten, vector, trace)
            results = self._correct(query, results, trace, refine=True)
        sources = [Hit(h.id, h.score, h.text, {**h.metadata, "source": h.metadata.get("source", "corpus"),
                                               "credibility": credibility_tier(h)}) for h in results]
        with trace.stage("answer"):
            answer, degraded = self._answer(query, sources, trace)
        return SearchResult(query, answer, sources, complexity, trace, degraded)

    def _refine(self, query: str, results: list[Hit], trace: Trace) -> list[Hit]:
        """CRAG's knowledge refinement, source by source (each source keeps its own citation)."""
        with trace.stage("refine"), charging(trace):
            out = []
            for h in results:
                ref = knowledge_refinement([h], query, self.crag.strip_scorer,
                                           strip_threshold=self.config.crag.strip_threshold)
                if ref.text:
                    out.append(Hit(h.id, h.score, ref.text, {**h.metadata, "refined": True}))
        trace.event("refine", kept=len(out))
        return out or results

    def _answer(self, query: str, sources: list[Hit], trace: Trace) -> tuple[str, bool]:
        if not sources:
            trace.event("degraded", reason="no results")
            return "I could not find any sources for this question, so I cannot answer it reliably.", True
        text, error = complete_with_sources(self.llm, self.prompts, query, sources, max_tokens=200, trace=trace)
        if error is not None:
            trace.event("degraded", reason=f"answer generation failed: {error}")
            text, degraded = "The answer could not be generated; the sources below are the best evidence found.", True
        else:
            degraded = False
        trace.event("inline_citations", present=any(f"[{i}]" in text for i in range(1, len(sources) + 1)))
        refs = "\n".join(f"[{i}] {s.metadata.get('title') or s.id} ({s.metadata['credibility']} credibility)"
                         for i, s in enumerate(sources, 1))
        return f"{text}\n\nSources:\n{refs}", degraded


def classifier_accuracy(classifier: ComplexityClassifier, examples: Sequence[tuple[str, str]]) -> float:
    return float(np.mean([classifier.classify(q) == lab for q, lab in examples])) if examples else 0.0


def cross_validated_accuracy(examples: Sequence[tuple[str, str]], *, folds: int = 5, seed: int = 0,
                             **kw) -> float:
    """Routing accuracy on held-out examples: stratified k-fold, each fold classified by a router trained on
    the others (never on the rows it is scored on)."""
    from sklearn.model_selection import StratifiedKFold

    labels = [lab for _, lab in examples]
    hits = 0
    for train, test in StratifiedKFold(folds, shuffle=True, random_state=seed).split(examples, labels):
        clf = ComplexityClassifier([examples[i] for i in train], seed=seed, **kw)
        hits += sum(clf.classify(examples[i][0]) == examples[i][1] for i in test)
    return hits / len(examples)


# ---------------------------------------------------------------- the registered technique
class WSOPParams(WSOPConfig):
    top_k: int = 5
    complexity: Literal["auto", "simple", "moderate", "complex"] = "auto"
    prompt_variant: Literal["chat", "completion"] = "chat"


@register_technique
class WSOPTechnique(Technique):
    name, role = "wsop", "wsop"
    summary = "the routed WSOP pipeline: complexity routing over HyDE, CRAG, RAG-Fusion and query rewriting"
    Params, config_section = WSOPParams, "wsop"
    params: WSOPParams

    def setup(self) -> None:
        p, s = self.params, self.services
        variant = p.prompt_variant
        # the techniques registered under these names: the built-ins' classes (a replacement keeps their parts)
        hyde = cast(HyDETechnique, build_technique(
            "hyde", s, HydeParams(**p.hyde.model_dump(), prompt_variant=variant))).hyde
        fusion = cast(FusionTechnique, build_technique(
            "rag-fusion", s, FusionParams(**p.rag_fusion.model_dump(), prompt_variant=variant))).fusion
        rewriter = cast(RewriteTechnique, build_technique(
            "query-rewriting", s, RewriteParams(**p.query_rewriting.model_dump(), prompt_variant=variant))).rewriter
        evaluator = RetrievalEvaluator(crag_scorer(p.crag, s), upper_threshold=p.crag.upper_threshold,
                                       lower_threshold=p.crag.lower_threshold)
        self.pipeline = WSOPPipeline(WSOPConfig(**{k: getattr(p, k) for k in WSOPConfig.model_fields}),
                                     s.require("llm"), s.require("retriever"), s.require("web"), evaluator,
                                     embedder=s.require("embedder"), top_k=p.top_k, prompt_variant=p.prompt_variant,
                                     hyde=hyde, fusion=fusion, rewriter=rewriter, seed=s.config.harness.seed)

    def _run(self, query: Query, trace: Trace) -> TechniqueResult:
        complexity = query.metadata.get("complexity", self.params.complexity)
        res = self.pipeline.search(query.text, complexity, trace)
        return self.result(query, res.sources, trace, res.answer, complexity=res.complexity, degraded=res.degraded)
