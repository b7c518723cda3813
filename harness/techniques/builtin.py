"""The built-in techniques, each registered with its parameters (defaults from the protocol, values from
the configuration section it names): the plain baselines, HyDE, CRAG, RAG-Fusion, query rewriting, the
routed WSOP pipeline, E2/E3/E4 and RET."""
from __future__ import annotations

import time
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from harness.config import CragConfig, FusionConfig, HydeConfig, RetSettings, RewriteConfig, WSOPConfig
from harness.techniques.registry import Technique, TechniqueResult, register_technique
from harness.types import Query, Trace


# ---------------------------------------------------------------- plain baselines
class _PlainRetrieval(Technique):
    mode: str = "dense"

    def setup(self) -> None:
        from harness.retrieval import Retriever

        base = self.services.require("retriever")
        self.retriever = base if base.mode == self.mode else Retriever(base.store, base.embedder, self.mode)

    def _run(self, query: Query, trace: Trace) -> TechniqueResult:
        with trace.stage("retrieve"):
            hits = self.retriever.retrieve(query.text, self.params.k)
        return self.result(query, hits, trace)

    def run_many(self, queries, *, concurrency: int = 1, progress=None) -> list[TechniqueResult]:
        """One embedding batch and one multi-vector search for all queries (the same hits as `run`)."""
        qs = [q if isinstance(q, Query) else Query(id=str(q), text=str(q)) for q in queries]
        if not qs:
            return []
        all_hits = self.retriever.retrieve_many([q.text for q in qs], self.params.k)
        if progress is not None:
            progress(len(qs), len(qs))
        return [self.result(q, hits, Trace()) for q, hits in zip(qs, all_hits)]


@register_technique
class Dense(_PlainRetrieval):
    name, mode = "dense", "dense"
    summary = "dense retrieval of the query's embedding (the baseline HyDE, fusion and rewriting are compared with)"


@register_technique
class BM25(_PlainRetrieval):
    name, mode = "bm25", "bm25"
    summary = "BM25 over LanceDB's full-text index"


@register_technique
class Hybrid(_PlainRetrieval):
    name, mode = "hybrid", "hybrid"
    summary = "dense and BM25 fused with reciprocal rank fusion"


# ---------------------------------------------------------------- HyDE
class HydeParams(HydeConfig):
    k: int = 10
    prompt_variant: Literal["chat", "completion"] = "chat"


@register_technique
class HyDETechnique(Technique):
    name, role = "hyde", "hyde"
    summary = "HyDE: retrieve with the embedding of LLM-written hypothetical documents (Gao et al. 2022)"
    Params, config_section = HydeParams, "wsop.hyde"

    def setup(self) -> None:
        from harness.llm.cache import ResponseCache
        from harness.techniques.hyde import HyDE

        p, s = self.params, self.services
        llm = s.llm_for(p.llm) if (p.llm and s.llm_for is not None) else s.require("llm")
        if p.llm and getattr(llm, "label", None) != p.llm:
            raise ValueError(f"wsop.hyde.llm is {p.llm!r} but no way to build that model was given "
                             "(Services.llm_for)")
        # HyDE's own cache of hypothetical documents, kept cache_ttl seconds (0: off); only where the run caches
        cache = (ResponseCache(s.config.harness.cache_dir / "hyde", ttl_s=p.cache_ttl)
                 if p.cache_ttl > 0 and s.config.harness.llm.cache and getattr(llm, "cache", None) is not None
                 else None)
        self.hyde = HyDE(llm, s.require("embedder"), num_documents=p.num_documents, temperature=p.temperature,
                         max_tokens=p.max_tokens, include_query=p.include_query, prompt_variant=p.prompt_variant,
                         cache=cache)

    @property
    def label(self) -> str:
        return self.hyde.variant

    def _run(self, query: Query, trace: Trace) -> TechniqueResult:
        res = self.hyde.expand(query.text, trace)
        with trace.stage("retrieve"):
            hits = self.services.require("retriever").retrieve_vector(res.vector, self.params.k, query=query.text)
        return self.result(query, hits, trace, hypothetical_documents=res.documents)


# ---------------------------------------------------------------- CRAG
class CragParams(CragConfig):
    k: int = 5
    max_web_results: int = 10
    ambiguous_web_results: int = 5
    generate: bool = True


def crag_scorer(params: CragConfig, services) -> Any:
    """`crag.scorer`: the (calibrated) reranker, or an LLM judge answering yes/no."""
    from harness.techniques.crag import llm_judge_scorer, reranker_scorer

    if params.scorer == "llm":
        return llm_judge_scorer(services.require("llm"))
    return reranker_scorer(services.require("reranker"))


@register_technique
class CRAGTechnique(Technique):
    name, role = "crag", "crag"
    summary = "Corrective RAG: evaluate retrieval, refine, fall back to web search (Yan et al. 2024)"
    Params, config_section = CragParams, "wsop.crag"

    def setup(self) -> None:
        from harness.techniques.crag import CRAG, RetrievalEvaluator

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


# ---------------------------------------------------------------- RAG-Fusion
class FusionParams(FusionConfig):
    prompt_variant: Literal["chat", "completion"] = "chat"
    parallel: bool = True


@register_technique
class FusionTechnique(Technique):
    name, role = "rag-fusion", "rag-fusion"
    summary = "RAG-Fusion: LLM-generated queries, retrieved in parallel, fused with RRF (Rackauckas 2024)"
    Params, config_section = FusionParams, "wsop.rag_fusion"

    def setup(self) -> None:
        from harness.techniques.fusion import RAGFusion

        p = self.params
        self.fusion = RAGFusion(self.services.require("llm"), self.services.require("retriever"),
                                num_queries=p.num_queries, rrf_k=p.rrf_k, top_k_per_query=p.top_k_per_query,
                                final_top_k=p.final_top_k, temperature=p.temperature, max_tokens=p.max_tokens,
                                prompt_variant=p.prompt_variant, parallel=p.parallel)

    def _run(self, query: Query, trace: Trace) -> TechniqueResult:
        res = self.fusion.search(query.text, trace)
        if len(res.queries) < 2:
            trace.event("multi_query_fallback", reason="no generated query survived parsing")
        return self.result(query, res.hits, trace, queries=res.queries)


# ---------------------------------------------------------------- query rewriting
class RewriteParams(RewriteConfig):
    k: int = 10
    prompt_variant: Literal["chat", "completion"] = "chat"


@register_technique
class RewriteTechnique(Technique):
    name, role = "query-rewriting", "query-rewriting"
    summary = "Rewrite-Retrieve-Read: an LLM (or a local T5 checkpoint) rewrites the query (Ma et al. 2023)"
    Params, config_section = RewriteParams, "wsop.query_rewriting"

    def setup(self) -> None:
        from harness.techniques.rewrite import LLMRewriter, Seq2SeqRewriter

        p = self.params
        if p.model == "llm":
            self.rewriter: Any = LLMRewriter(self.services.require("llm"), max_tokens=p.max_length,
                                             prompt_variant=p.prompt_variant)
        else:  # a path to a local T5 checkpoint (e.g. one trained with Seq2SeqRewriter.policy_gradient_step)
            from pathlib import Path

            if not (Path(p.model) / "config.json").is_file():
                raise ValueError(f"wsop.query_rewriting.model: {p.model!r} is neither 'llm' nor a folder holding a "
                                 "T5 checkpoint (config.json)")
            self.rewriter = Seq2SeqRewriter.from_pretrained(p.model)
            self.rewriter.max_length = p.max_length

    def _run(self, query: Query, trace: Trace) -> TechniqueResult:
        if hasattr(self.rewriter, "llm"):
            rewritten = self.rewriter.rewrite(query.text, trace=trace)
        else:
            with trace.stage("rewrite"):
                rewritten = self.rewriter.rewrite(query.text)
            trace.event("rewrite")
        with trace.stage("retrieve"):
            hits = self.services.require("retriever").retrieve(rewritten, self.params.k)
        return self.result(query, hits, trace, rewritten=rewritten)


# ---------------------------------------------------------------- the routed WSOP pipeline
class WSOPParams(WSOPConfig):
    top_k: int = 5
    complexity: Literal["auto", "simple", "moderate", "complex"] = "auto"
    prompt_variant: Literal["chat", "completion"] = "chat"


@register_technique
class WSOPTechnique(Technique):
    name, role = "wsop", "wsop"
    summary = "the routed WSOP pipeline: complexity routing over HyDE, CRAG, RAG-Fusion and query rewriting"
    Params, config_section = WSOPParams, "wsop"

    def setup(self) -> None:
        from harness.techniques.crag import RetrievalEvaluator
        from harness.techniques.registry import build_technique
        from harness.techniques.wsop import WSOPPipeline

        p, s = self.params, self.services
        variant = {"prompt_variant": p.prompt_variant}
        hyde = build_technique("hyde", s, HydeParams(**p.hyde.model_dump(), **variant)).hyde
        fusion = build_technique("rag-fusion", s, FusionParams(**p.rag_fusion.model_dump(), **variant)).fusion
        rewriter = (build_technique("query-rewriting", s, RewriteParams(**p.query_rewriting.model_dump(), **variant))
                    .rewriter)
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


# ---------------------------------------------------------------- E2 / E3 / E4
class E2E4Params(BaseModel):
    model_config = ConfigDict(extra="forbid")
    top_k: int = 5
    candidates: int = 20  # E3/E4: first-stage candidates before reranking


class _Experiment(Technique):
    Params = E2E4Params
    experiment = "e2"

    def setup(self) -> None:
        from harness.techniques.e2e4 import EXPERIMENTS, Services as E2E4Services

        s = self.services
        llm = s.require("llm")
        services = E2E4Services(s.require("retriever").store, s.require("embedder"),
                                s.require("reranker") if self.experiment != "e2" else s.reranker, llm,
                                getattr(llm, "label", "?"), False)
        self.exp = EXPERIMENTS[self.experiment](services)
        self.exp.top_k, self.exp.candidates, self.exp.keep = self.params.top_k, self.params.candidates, self.params.top_k

    def _run(self, query: Query, trace: Trace) -> TechniqueResult:
        t0 = time.perf_counter()
        with trace.stage("pipeline"):
            out = self.exp.run(query.text, trace=trace)
        return self.result(query, out.hits, trace, out.answer, reasoning=out.reasoning, structured=out.structured,
                           retrieval_ms=out.retrieval_ms, rerank_ms=out.rerank_ms, llm_ms=out.llm_ms,
                           total_ms=(time.perf_counter() - t0) * 1000)


@register_technique
class E2Standard(_Experiment):
    name, experiment, role = "e2-standard", "e2", "e2"
    summary = "E2: standard RAG (top-5 dense chunks, cited answer)"


@register_technique
class E3Filtered(_Experiment):
    name, experiment, role = "e3-filtered", "e3", "e3"
    summary = "E3: filtered RAG (20 dense candidates, reranked to 5)"


@register_technique
class E4Reasoning(_Experiment):
    name, experiment, role = "e4-reasoning", "e4", "e4"
    summary = "E4: reasoning RAG (E3's retrieval, JSON reasoning steps then the answer)"


def experiment_technique(exp: type) -> type[Technique]:
    """The registered technique for an experiment added with `register_experiment` (named like it)."""
    cls = type(f"{exp.__name__}Technique", (_Experiment,), {
        "name": exp.name, "experiment": exp.name, "role": exp.name,
        "summary": (exp.__doc__ or f"experiment {exp.name}").strip().splitlines()[0]})
    return register_technique(cls, replace=True)


# ---------------------------------------------------------------- RET
class RetParams(RetSettings):
    k: int = 10
    per_query: int = 10


@register_technique
class RETTechnique(Technique):
    name, role = "ret", "ret"
    summary = "RET: answer hypotheses -> evidence fingerprints -> fingerprint-seeded retrieval (off unless enable_ret)"
    Params, config_section = RetParams, "ret"

    def setup(self) -> None:
        from harness.techniques.ret import RET

        p = self.params
        settings = RetSettings(**{k: getattr(p, k) for k in RetSettings.model_fields})
        self.ret = RET(self.services.require("llm"), settings, k=p.k, per_query=p.per_query)

    def _run(self, query: Query, trace: Trace) -> TechniqueResult:
        res = self.ret.select(query.text, self.services.require("retriever"), trace=trace)
        return self.result(query, res.docs, trace, ret=res, skip_reason=res.skip_reason, table=res.table)

    def score_options(self, result: TechniqueResult, options: list[str], pick: int | None) -> list[float]:
        """MCQ option scores: the LLM's pick, lexical support and (RET on) fingerprint coverage, blended with
        `mcq_fingerprint_weight`."""
        from harness.techniques.ret_mcq import option_scores

        return option_scores(result.detail["ret"], options, pick, weight=self.params.mcq_fingerprint_weight)
