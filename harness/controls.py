"""Negative controls: for every spec, a deliberately broken variant of the thing it is named after, under
which its own check must fail. A check that still passes under its control proves nothing.

A control is a named patch (`apply(monkeypatch)`) registered with `@control(name, breaks=...)`; the
catalogue names it in a spec's `control:` field, and `pytest --negative-controls` re-runs each spec's tests
under it (see `harness.pytest_plugin`). Patches replace a library object everywhere it is referenced
(`replace_everywhere`), including modules that imported it by name, so tests see the broken variant.
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np


@dataclass(frozen=True)
class Control:
    name: str
    breaks: str
    apply: Callable[[Any], None]


CONTROLS: dict[str, Control] = {}
ENV = "RAG_HARNESS_CONTROL"  # set while a control runs, so subprocesses a test starts apply it too


def active_control() -> str | None:
    """The name of the negative control in force (in this process or inherited by a subprocess), if any."""
    return os.environ.get(ENV) or None


def apply_from_env() -> str | None:
    """In a subprocess a test started (e.g. the CLI), apply the control named in the environment for the
    process's lifetime. Returns its name, or None when no control is in force."""
    name = active_control()
    if name:
        import pytest

        get_control(name).apply(pytest.MonkeyPatch())
    return name


def control(name: str, *, breaks: str) -> Callable[[Callable[[Any], None]], Callable[[Any], None]]:
    """Register `fn(monkeypatch)` as the negative control `name`; `breaks` says what it breaks, in words."""
    def deco(fn: Callable[[Any], None]) -> Callable[[Any], None]:
        if name in CONTROLS:
            raise ValueError(f"negative control {name!r} is registered twice")
        CONTROLS[name] = Control(name, breaks, fn)
        return fn
    return deco


def get_control(name: str) -> Control:
    try:
        return CONTROLS[name]
    except KeyError:
        raise KeyError(f"unknown negative control {name!r}; registered: {', '.join(sorted(CONTROLS))}") from None


_REPLACED: list[tuple[Any, Any]] = []


def replace_everywhere(mp: Any, original: Any, replacement: Any) -> int:
    """Set `replacement` wherever a loaded module holds `original` (by identity); returns how many places.
    `restore_everywhere()` (after `mp.undo()`) also puts back references taken while the control was active."""
    _REPLACED.append((original, replacement))
    n = 0
    for mod in list(sys.modules.values()):
        d = getattr(mod, "__dict__", None)
        if not isinstance(d, dict):
            continue
        for attr, value in list(d.items()):
            if value is original:
                mp.setattr(mod, attr, replacement)
                n += 1
    if n == 0:
        raise RuntimeError(f"negative control found no reference to {original!r}")
    return n


def restore_everywhere() -> int:
    """Undo what `mp.undo()` cannot see: modules first imported while a control was active took the broken
    object by name; put the original back there. Returns how many references were restored."""
    n = 0
    while _REPLACED:
        original, replacement = _REPLACED.pop()
        for mod in list(sys.modules.values()):
            d = getattr(mod, "__dict__", None)
            if isinstance(d, dict):
                for attr, value in list(d.items()):
                    if value is replacement:
                        setattr(mod, attr, original)
                        n += 1
    return n


# ---------------------------------------------------------------- HyDE
@control("hyde-keeps-prompt-echo", breaks="HyDE keeps the prompt the model echoed at the start of its document")
def _hyde_echo(mp: Any) -> None:
    from harness.techniques import hyde, parsing

    replace_everywhere(mp, parsing.strip_echo, lambda text, prompt: text.strip())
    assert hyde  # the module holds strip_echo by name


@control("hyde-embeds-query", breaks="HyDE embeds the query instead of the hypothetical documents")
def _hyde_query(mp: Any) -> None:
    from harness.techniques.hyde import HyDE, HydeResult

    def expand(self, query, trace=None, *, hypothetical_documents=None):
        docs = hypothetical_documents if hypothetical_documents is not None else self.generate(query, trace)
        return HydeResult(self.embedder.encode([query])[0], docs, False)

    mp.setattr(HyDE, "expand", expand)


@control("hyde-lexical-bottleneck", breaks="HyDE searches the hypothetical document's words (BM25) instead of "
                                          "its dense embedding, so its false details match documents")
def _hyde_lexical(mp: Any) -> None:
    from harness.techniques.hyde import HyDE

    def retrieve(self, query, retriever, k=10, trace=None, *, hypothetical_documents=None):
        docs = hypothetical_documents if hypothetical_documents is not None else self.generate(query, trace)
        return retriever.store.search_text(" ".join(docs) or query, k)

    mp.setattr(HyDE, "retrieve", retrieve)


# ---------------------------------------------------------------- RAG-Fusion and RRF
@control("fusion-generates-one-query", breaks="multi-query generation yields one generated query beside the "
                                              "original (what is left of a model that writes one query four times)")
def _fusion_one_query(mp: Any) -> None:
    from harness.techniques import fusion

    orig = fusion.generate_multi_queries
    replace_everywhere(mp, orig, lambda q, llm, *a, **kw: orig(q, llm, *a, **kw)[:2])


@control("rrf-rank-from-0", breaks="RRF counts ranks from 0: 1/(k + 0) for the top hit")
def _rrf_zero(mp: Any) -> None:
    from harness.retrieval import rank_fusion

    def rrf_scores(rankings, k=rank_fusion.RRF_K):
        scores: dict[str, float] = {}
        for ranking in rankings:
            for rank, doc_id in enumerate(ranking):
                scores[doc_id] = scores.get(doc_id, 0.0) + 1.0 / (rank + k)
        return scores

    replace_everywhere(mp, rank_fusion.rrf_scores, rrf_scores)


@control("fusion-merge-random", breaks="RAG-Fusion merges its per-query lists in an unseeded random order "
                                       "instead of by RRF, so each run ranks the same lists differently")
def _fusion_random_merge(mp: Any) -> None:
    import random

    from harness.techniques import fusion
    from harness.types import Hit

    def merge(result_sets, k=60):
        first: dict[str, Hit] = {}
        for hits in result_sets:
            for h in hits:
                first.setdefault(h.id, h)
        order = list(first)
        random.Random().shuffle(order)  # a fresh generator seeded from the OS: no run repeats another
        return [Hit(d, 1.0 / (i + 1), first[d].text, {**first[d].metadata, "rrf_ranks": []})
                for i, d in enumerate(order)]

    mp.setattr(fusion, "reciprocal_rank_fusion", merge)


@control("fusion-searches-original-only", breaks="RAG-Fusion retrieves for the original query only")
def _fusion_original(mp: Any) -> None:
    from harness.techniques.fusion import RAGFusion

    orig = RAGFusion.search_and_fuse
    mp.setattr(RAGFusion, "search_and_fuse", lambda self, queries, trace=None, **kw: orig(self, list(queries)[:1], trace))


@control("fusion-drops-original-query", breaks="multi-query generation leaves the original query out")
def _fusion_no_original(mp: Any) -> None:
    from harness.techniques import fusion

    orig = fusion.generate_multi_queries
    replace_everywhere(mp, orig, lambda q, llm, *a, **kw: [x for x in orig(q, llm, *a, **kw) if x != q])


@control("fusion-query-generation-per-query", breaks="RAG-Fusion calls the model once per generated query "
                                                     "(num_queries multi-query calls instead of one)")
def _fusion_generation_per_query(mp: Any) -> None:
    from harness.techniques import fusion

    orig = fusion.generate_multi_queries

    def per_query(original_query, llm, num_queries=4, **kw):
        calls = [orig(original_query, llm, num_queries, **kw) for _ in range(max(1, num_queries))]
        return calls[-1]

    mp.setattr(fusion, "generate_multi_queries", per_query)


# ---------------------------------------------------------------- CRAG
@control("crag-aggregates-by-mean", breaks="the retrieval evaluator aggregates the documents' scores by their mean "
                                           "instead of their max (one relevant document no longer suffices)")
def _crag_mean(mp: Any) -> None:
    from harness.techniques import crag

    def evaluate(self, query, documents):
        scores = self.scorer(query, [d.text for d in documents]) if documents else np.zeros(0)
        scored = scores[~np.isnan(scores)]
        self.last_failed = len(scores) - len(scored)
        if len(scores) and not len(scored):
            return crag.AMBIGUOUS, float("nan")
        conf = float(scored.mean()) if len(scored) else 0.0
        return (crag.CORRECT if conf >= self.upper else crag.INCORRECT if conf <= self.lower else crag.AMBIGUOUS), conf

    mp.setattr(crag.RetrievalEvaluator, "evaluate", evaluate)


@control("crag-never-searches-web", breaks="CRAG keeps the corpus results on INCORRECT and AMBIGUOUS (no web search)")
def _crag_no_web(mp: Any) -> None:
    from harness.techniques import crag
    from harness.types import Hit

    def correct(self, query, docs, trace):
        action, conf = self.evaluator.evaluate(query, docs)
        trace.event("crag", action=action, confidence=conf)
        return action, conf, [Hit(h.id, h.score, h.text, {**h.metadata, "source": "corpus"}) for h in docs]

    mp.setattr(crag.CRAG, "correct", correct)


@control("crag-discards-all-knowledge", breaks="CRAG's correction discards every document, corpus and web alike "
                                                "(the generator answers from the question alone)")
def _crag_no_knowledge(mp: Any) -> None:
    from harness.techniques import crag

    orig = crag.CRAG.correct

    def correct(self, query, docs, trace):
        action, conf, _ = orig(self, query, docs, trace)
        return action, conf, []

    mp.setattr(crag.CRAG, "correct", correct)


@control("crag-ambiguous-web-only", breaks="CRAG replaces the corpus results by web results on AMBIGUOUS")
def _crag_ambiguous(mp: Any) -> None:
    from harness.techniques import crag

    orig = crag.CRAG.correct

    def correct(self, query, docs, trace):
        action, conf, sources = orig(self, query, docs, trace)
        return action, conf, [s for s in sources if s.metadata.get("source") == "web"]

    mp.setattr(crag.CRAG, "correct", correct)


@control("crag-refinement-keeps-all", breaks="knowledge refinement keeps every strip whatever its score")
def _crag_keep_all(mp: Any) -> None:
    from harness.techniques import crag

    orig = crag.knowledge_refinement
    replace_everywhere(mp, orig, lambda docs, query, scorer, **kw: orig(docs, query, scorer,
                                                                        **{**kw, "strip_threshold": float("-inf")}))


@control("crag-strips-whole-documents", breaks="decomposition returns each document as one strip")
def _crag_whole(mp: Any) -> None:
    from harness.retrieval import chunking

    replace_everywhere(mp, chunking.knowledge_strips, lambda text, *a, **kw: [text] if text.strip() else [])


# ---------------------------------------------------------------- query rewriting
@control("rewrite-no-length-limit", breaks="the rewriter neither truncates long outputs nor parses the first item")
def _rewrite_no_limit(mp: Any) -> None:
    from harness.techniques.rewrite import LLMRewriter

    def rewrite(self, query, context=None, trace=None):
        template = self.prompts["user_with_context"] if context else self.prompts["user"]
        from harness.prompts import render

        text = self.llm.complete(render(template, query=query, context=context or ""), max_tokens=512).text
        return text.strip() or query

    mp.setattr(LLMRewriter, "rewrite", rewrite)


@control("rewrite-returns-original", breaks="the rewriter returns the query unchanged")
def _rewrite_identity(mp: Any) -> None:
    from harness.techniques.rewrite import LLMRewriter

    mp.setattr(LLMRewriter, "rewrite", lambda self, query, context=None, trace=None: query)


@control("reward-weights-unnormalised", breaks="the PPO reward adds EM, F1 and hit with unit weights (range 0..3), "
                                               "not 0.4/0.4/0.2 summing to 1")
def _reward_unnormalised(mp: Any) -> None:
    from harness.techniques.rewrite import PPORewardFunction

    orig = PPORewardFunction.compute_reward

    def compute_reward(self, generated_answer, ground_truth, retrieval_hit):
        parts = [PPORewardFunction(1.0, 0.0, 0.0), PPORewardFunction(0.0, 1.0, 0.0), PPORewardFunction(0.0, 0.0, 1.0)]
        return sum(orig(p, generated_answer, ground_truth, retrieval_hit) for p in parts)

    mp.setattr(PPORewardFunction, "compute_reward", compute_reward)


@control("policy-step-skips-update", breaks="the policy-gradient step computes the loss but never steps the optimiser")
def _policy_no_step(mp: Any) -> None:
    import torch

    mp.setattr(torch.optim.Adam, "step", lambda self, closure=None: None)


@control("web-search-returns-nothing", breaks="the web-search backend returns no documents")
def _web_empty(mp: Any) -> None:
    from harness.techniques.crag import LocalWebSearch

    mp.setattr(LocalWebSearch, "search", lambda self, query, num_results=10: [])


# ---------------------------------------------------------------- WSOP routed pipeline
@control("router-always-complex", breaks="the complexity router sends every query down the complex path")
def _router_complex(mp: Any) -> None:
    from harness.techniques import wsop

    mp.setattr(wsop.ComplexityClassifier, "classify", lambda self, query: "complex")
    orig = wsop.WSOPPipeline.search
    mp.setattr(wsop.WSOPPipeline, "search", lambda self, query, complexity="auto", trace=None:
               orig(self, query, "complex" if complexity != "auto" else complexity, trace))


@control("wsop-complex-without-hyde", breaks="the complex path skips HyDE (embeds the rewritten query)")
def _wsop_no_hyde(mp: Any) -> None:
    from harness.techniques import wsop

    orig = wsop.WSOPPipeline.search

    def search(self, query, complexity="auto", trace=None):
        real = self.hyde.expand
        self.hyde.expand = lambda q, trace=None, **kw: type(real(q, None))(self.hyde.embedder.encode([q])[0], [],
                                                                             True)
        try:
            return orig(self, query, complexity, trace)
        finally:
            del self.hyde.expand

    mp.setattr(wsop.WSOPPipeline, "search", search)


@control("wsop-no-web-fallback", breaks="the pipeline never falls back to web search on low confidence")
def _wsop_no_web(mp: Any) -> None:
    from harness.techniques import wsop

    orig = wsop.WSOPPipeline._correct

    def _correct(self, query, results, trace, *, refine):
        web, self.crag.web = self.crag.web, wsop.NoWebSearch()
        try:
            return orig(self, query, results, trace, refine=refine)
        finally:
            self.crag.web = web

    mp.setattr(wsop.WSOPPipeline, "_correct", _correct)


@control("credibility-always-high", breaks="every source is rated high credibility")
def _cred_high(mp: Any) -> None:
    from harness.techniques import wsop

    replace_everywhere(mp, wsop.credibility_tier, lambda hit: "high")


@control("wsop-sources-misnumbered", breaks="the answer prompt numbers its sources from [0] while the list the answer "
                                            "appends numbers them from [1], so each citation names another source")
def _wsop_misnumbered(mp: Any) -> None:
    from harness.techniques import generation

    def numbered_sources(hits, *, max_chars=700):
        return "\n".join(f"[{i}] {h.text[:max_chars]}" for i, h in enumerate(hits))

    replace_everywhere(mp, generation.numbered_sources, numbered_sources)


@control("wsop-same-work-at-every-level", breaks="every complexity level runs the moderate path")
def _wsop_flat(mp: Any) -> None:
    from harness.techniques import wsop

    orig = wsop.WSOPPipeline.search
    mp.setattr(wsop.WSOPPipeline, "search", lambda self, query, complexity="auto", trace=None:
               orig(self, query, "moderate", trace))


@control("wsop-no-degradation", breaks="an empty index gives an answer with no sources and no degraded flag")
def _wsop_no_degrade(mp: Any) -> None:
    from harness.techniques import wsop

    orig = wsop.WSOPPipeline._answer

    def _answer(self, query, sources, trace):
        if not sources:
            return "The answer is 42.", False
        return orig(self, query, sources, trace)

    mp.setattr(wsop.WSOPPipeline, "_answer", _answer)


@control("wsop-skips-fusion", breaks="the complex path takes the first query's results instead of fusing all three")
def _wsop_no_fusion(mp: Any) -> None:
    from harness.techniques.fusion import FusionResult, RAGFusion

    def search_and_fuse(self, queries, trace=None, *, vectors=None):
        hits = self.retriever.retrieve(list(queries)[0], self.top_k_per_query)
        return FusionResult(list(queries), hits, [hits], trace)

    mp.setattr(RAGFusion, "search_and_fuse", search_and_fuse)


# ---------------------------------------------------------------- RET
@control("ret-hypotheses-unparsed", breaks="hypothesis parsing returns nothing for any model output")
def _ret_no_hyps(mp: Any) -> None:
    from harness.techniques import ret

    replace_everywhere(mp, ret.generate_hypotheses, lambda *a, **kw: [])


@control("ret-no-fingerprints", breaks="fingerprint extraction returns no fingerprints")
def _ret_no_fps(mp: Any) -> None:
    from harness.techniques import ret

    replace_everywhere(mp, ret.extract_fingerprints, lambda hyps, *a, **kw: {h.hypothesis: [] for h in hyps})


@control("ret-coverage-constant", breaks="fingerprint coverage is 0.5 for every document")
def _ret_cov(mp: Any) -> None:
    from harness.techniques import ret

    replace_everywhere(mp, ret.fingerprint_coverage, lambda text, fingerprints: 0.5)


@control("ret-plan-without-fingerprints", breaks="the retrieval plan ignores the fingerprints")
def _ret_plan(mp: Any) -> None:
    from harness.techniques import ret

    replace_everywhere(mp, ret.build_retrieval_plan, lambda question, fps, config, base=None:
                       dict(base or {"primary": [question]}))


@control("ret-synthesis-without-table", breaks="the synthesis prompt leaves out the coverage table")
def _ret_no_table(mp: Any) -> None:
    from harness.techniques import ret

    orig = ret.synthesis_prompt
    replace_everywhere(mp, orig, lambda question, evidence, table=None: orig(question, evidence, None))


@control("ret-mcq-blend-ignores-weight", breaks="the MCQ blend always uses 0.7 llm + 0.3 lexical + weight x coverage")
def _ret_blend(mp: Any) -> None:
    from harness.techniques import ret

    replace_everywhere(mp, ret.mcq_blend, lambda llm_net, lexical, coverage, weight=0.20:
                       0.7 * llm_net + 0.3 * lexical + weight * (coverage or 0.0))


@control("ret-mcq-blend-weight-zero-ignored", breaks="the MCQ blend reads a fingerprint weight of 0 as unset and "
                                                     "blends at the default 0.20 (`weight or 0.20`)")
def _ret_blend_zero(mp: Any) -> None:
    from harness.techniques import ret

    orig = ret.mcq_blend
    replace_everywhere(mp, orig, lambda llm_net, lexical, coverage, weight=0.20:
                       orig(llm_net, lexical, coverage, weight or 0.20))


@control("ret-ignores-hypothesis-quality", breaks="RET runs on hypotheses with one-word justifications")
def _ret_quality(mp: Any) -> None:
    from harness.techniques.ret import RET

    orig = RET.select

    def select(self, question, retriever, **kw):
        self.config = self.config.model_copy(update={"min_justification_tokens": 0})
        return orig(self, question, retriever, **kw)

    mp.setattr(RET, "select", select)


@control("ret-ignores-parse-failure", breaks="unparseable fingerprints fall back to the question's words silently")
def _ret_parse(mp: Any) -> None:
    from harness.techniques import ret

    orig = ret.extract_fingerprints

    def extract(hyps, question, *a, **kw):
        out = orig(hyps, question, *a, **kw)
        return {h: (v or [question, question]) for h, v in out.items()} or {h.hypothesis: [question] * 2 for h in hyps}

    replace_everywhere(mp, orig, extract)


@control("ret-ignores-budget", breaks="RET's budget guard reads 0 spend whatever the question's run has spent (or a "
                                     "caller passes), so RET calls the model on a spent budget")
def _ret_budget(mp: Any) -> None:
    from harness.techniques.ret import RET

    orig = RET.select
    mp.setattr(RET, "select", lambda self, question, retriever, spent_usd=None, **kw:
               orig(self, question, retriever, spent_usd=0.0, **kw))


@control("ret-gates-ignore-skips", breaks="the RET gates count no question as fallen back (fallback_rate 0), so a "
                                         "gate measured where RET skipped reads as if RET had run")
def _ret_gates_skips(mp: Any) -> None:
    from harness.techniques import ret_eval

    replace_everywhere(mp, ret_eval.fallback_rate, lambda off, on: 0.0)


@control("ret-tau-drops-lost-gold", breaks="GATE-3 drops a question whose gold passage left one arm's top 10 "
                                          "(tau undefined there) instead of scoring that arm -1")
def _ret_tau_drops(mp: Any) -> None:
    from harness.techniques import ret_eval

    replace_everywhere(mp, ret_eval.gate_tau, lambda relevance, other: ret_eval.selection_tau(relevance))


@control("ret-top-hypothesis-first-on-ties", breaks="GATE-4 credits the first generated hypothesis when several "
                                                   "tie for the top fingerprint coverage")
def _ret_top_first(mp: Any) -> None:
    from harness.techniques import ret, ret_eval

    def first_of_best(res: Any) -> str | None:
        if res.skip_reason or not res.hypotheses:
            return None
        return max(res.hypotheses, key=lambda h: max((ret.fingerprint_coverage(d.text, res.fingerprints.get(
            h.hypothesis, [])) for d in res.docs), default=0.0)).hypothesis

    replace_everywhere(mp, ret_eval.top_coverage_hypothesis, first_of_best)


# ---------------------------------------------------------------- retrieval backbone and metrics
@control("embedding-cache-off", breaks="the embedding cache never returns a stored vector")
def _emb_cache(mp: Any) -> None:
    from harness.retrieval.embed import EmbeddingCache

    mp.setattr(EmbeddingCache, "get_many", lambda self, keys: {})


@control("ndcg-off-by-one-rank", breaks="nDCG discounts the hit at rank r by log2(r) + 1 instead of log2(r + 1)")
def _ndcg_off(mp: Any) -> None:
    from harness.metrics import ranking

    def _ndcg(m, k):
        disc = 1.0 / (np.log2(np.arange(1, k + 1, dtype=np.float64)) + 1.0)
        return ranking._safe_div(m.gains[:, :k] @ disc, m.ideal[:, :k] @ disc)

    mp.setitem(ranking.MATRIX_METRICS, "ndcg", _ndcg)


# ---------------------------------------------------------------- E2/E3/E4 experiments (runner, parsing, logging)
@control("e2e4-services-ignore-given-llm", breaks="the runner answers with its dry-run model whatever LLM it is given")
def _e2e4_ignore_llm(mp: Any) -> None:
    from harness import runner

    orig = runner.build_services
    mp.setattr(runner, "build_services", lambda inputs, **kw: orig(inputs, **{**kw, "dry_run": True}))


@control("e2e4-index-built-lazily", breaks="the KB is indexed only when the first query arrives")
def _e2e4_lazy(mp: Any) -> None:
    import logging

    from harness import runner
    from harness.retrieval.index.lancedb_store import IndexStats
    from harness.techniques.e2e4 import Experiment

    orig_index, orig_run, deferred = runner.index_kb, Experiment.run, []

    def index_later(inputs, store, embedder, **kw):
        deferred.append((inputs, store, embedder, kw))
        return IndexStats(rows=0, encoded=0, skipped=True, seconds=0.0, ann_index=False)

    def run(self, q):
        while deferred:
            inputs, store, embedder, kw = deferred.pop()
            stats = orig_index(inputs, store, embedder, **kw)
            logging.getLogger(runner.LOG_NAME).info("Indexed %d chunks in %.1fs (on first query)", stats.rows,
                                                       stats.seconds)
        return orig_run(self, q)

    mp.setattr(runner, "index_kb", index_later)
    mp.setattr(Experiment, "run", run)


@control("dry-run-calls-an-api", breaks="the dry run answers through a hosted API instead of its scripted model")
def _dry_network(mp: Any) -> None:
    import dataclasses

    from harness import runner

    orig = runner.build_services

    def build(inputs, **kw):
        services, stats = orig(inputs, **kw)
        if not kw.get("dry_run"):
            return services, stats
        # 192.0.2.1 is TEST-NET-1 (RFC 5737): documentation only, routed nowhere, so even an unguarded
        # attempt reaches no one; the test's socket guard records it and refuses it before any packet.
        net = runner.LLMClient("openai/gpt-4o-mini", api_base="http://192.0.2.1:9/v1", api_key="sk-none",
                               max_attempts=1, timeout_s=2.0)
        return dataclasses.replace(services, llm=net), stats

    mp.setattr(runner, "build_services", build)


@control("dry-run-needs-api-key", breaks="the dry run refuses to start without an API key")
def _dry_key(mp: Any) -> None:
    from harness import runner

    orig = runner.build_services

    def build(inputs, **kw):
        if kw.get("dry_run") and not any(k.endswith("_API_KEY") for k in os.environ):
            raise runner.RunHalted("no API key configured")
        return orig(inputs, **kw)

    mp.setattr(runner, "build_services", build)


@control("embedding-no-retry", breaks="a failed embedding batch is not retried")
def _emb_no_retry(mp: Any) -> None:
    from harness.retrieval.embed import RetryingEmbedder

    mp.setattr(RetryingEmbedder, "encode", lambda self, texts: self.inner.encode(list(texts)))


@control("queries-schema-unchecked", breaks="query rows are not validated (an unknown query_type passes)")
def _schema_off(mp: Any) -> None:
    from harness.data import experiment

    def load(path, *, strict=True, skips=None):
        import json

        rows = [json.loads(ln) for ln in open(path, encoding="utf-8") if ln.strip().startswith("{") and ln.strip().endswith("}")]
        return [experiment.QueryInput.model_construct(**r) for r in rows]

    replace_everywhere(mp, experiment.load_queries_jsonl, load)


@control("query-types-not-identified", breaks="every query is labelled 'direct' whatever its type")
def _types_off(mp: Any) -> None:
    from harness.data import experiment

    orig = experiment.load_experiment_inputs

    def load(kb_dir, *, strict=True):
        inputs = orig(kb_dir, strict=strict)
        inputs.queries = [q.model_copy(update={"query_type": "direct"}) for q in inputs.queries]
        return inputs

    replace_everywhere(mp, orig, load)


def _edit_chunk_metadata(mp: Any, edit: Callable[[dict[str, Any]], None]) -> None:
    """Patch `chunk_record` so that `edit` rewrites each written chunk's metadata."""
    from harness.techniques import e2e4

    orig = e2e4.chunk_record

    def record(h):
        rec = orig(h)
        edit(rec["metadata"])
        return rec

    replace_everywhere(mp, orig, record)


@control("chunks-lose-metadata", breaks="result chunks are written without their section")
def _chunk_meta(mp: Any) -> None:
    _edit_chunk_metadata(mp, lambda meta: meta.update(section=""))


@control("chunk-metadata-wrong-file", breaks="result chunks name the page listed before their own")
def _chunk_file(mp: Any) -> None:
    _edit_chunk_metadata(mp, lambda meta: meta.update(
        filename="electronics_01.md" if meta["filename"] != "electronics_01.md" else "furniture_01.md"))


@control("e2-generation-returns-empty", breaks="every fifth E2 answer is empty")
def _e2_empty(mp: Any) -> None:
    from harness.techniques.e2e4 import Experiment

    orig = Experiment.generate
    calls = {"n": 0}

    def generate(self, query, hits, trace=None):
        calls["n"] += 1
        answer, reasoning, structured = orig(self, query, hits, trace)
        return ("" if calls["n"] % 5 == 0 else answer), reasoning, structured

    mp.setattr(Experiment, "generate", generate)


@control("resume-ignores-done", breaks="a re-run does not read which queries are already done")
def _resume_off(mp: Any) -> None:
    from harness import runner

    mp.setattr(runner, "completed_ids", lambda path: set())


@control("runner-writes-torn-lines", breaks="every tenth result line is written without its closing brace")
def _torn(mp: Any) -> None:
    import json

    from harness import runner

    calls = {"n": 0}

    def append(fh, row):
        calls["n"] += 1
        text = json.dumps(row, ensure_ascii=False)
        fh.write((text[:-1] if calls["n"] % 10 == 0 else text) + "\n")
        fh.flush()

    mp.setattr(runner, "append_result", append)


@control("runner-drops-results", breaks="every fiftieth result is never written")
def _drop(mp: Any) -> None:
    from harness import runner

    orig = runner.append_result
    calls = {"n": 0}

    def append(fh, row):
        calls["n"] += 1
        if calls["n"] % 50:
            orig(fh, row)

    mp.setattr(runner, "append_result", append)


@control("overwrite-ignored", breaks="--overwrite is ignored (done queries are skipped)")
def _overwrite(mp: Any) -> None:
    from harness import runner

    orig = runner.run_experiments
    replace_everywhere(mp, orig, lambda kb, out, **kw: orig(kb, out, **{**kw, "overwrite": False}))


@control("runner-logs-to-console", breaks="the run logs to the console (stderr) instead of the log file")
def _console(mp: Any) -> None:
    import logging

    from harness import runner

    def file_logger(log_dir):
        log = logging.getLogger(runner.LOG_NAME)
        log.setLevel(logging.DEBUG)
        for h in list(log.handlers):
            log.removeHandler(h)
        log.addHandler(logging.StreamHandler(sys.stderr))
        return log

    replace_everywhere(mp, runner.file_logger, file_logger)


def _edit_log_handlers(mp: Any, edit: Callable[[Any], None]) -> None:
    """Patch the runner's `file_logger` so that `edit` changes each handler of the logger it returns."""
    from harness import runner

    orig = runner.file_logger

    def file_logger(log_dir):
        log = orig(log_dir)
        for h in log.handlers:
            edit(h)
        return log

    replace_everywhere(mp, orig, file_logger)


@control("log-lines-without-time", breaks="log lines carry neither a timestamp nor a level")
def _bare_log(mp: Any) -> None:
    import logging

    _edit_log_handlers(mp, lambda h: h.setFormatter(logging.Formatter("%(message)s")))


@control("errors-not-logged", breaks="failed queries are not logged as errors")
def _no_errors(mp: Any) -> None:
    import logging

    _edit_log_handlers(mp, lambda h: h.addFilter(lambda record: record.levelno < logging.ERROR))


@control("rows-missing-fields", breaks="result rows are written without their ground truth")
def _rows_fields(mp: Any) -> None:
    from harness import runner

    orig = runner.append_result
    mp.setattr(runner, "append_result", lambda fh, row: orig(fh, {k: v for k, v in row.items() if k != "ground_truth"}))


@control("e4-discards-reasoning", breaks="E4 keeps the answer and drops the reasoning steps")
def _e4_no_reasoning(mp: Any) -> None:
    from harness.techniques.e2e4 import E4Reasoning

    orig = E4Reasoning.generate

    def generate(self, query, hits, trace=None):
        answer, _, structured = orig(self, query, hits, trace)
        return answer, None, structured

    mp.setattr(E4Reasoning, "generate", generate)


@control("os-specific-import", breaks="a library module imports fcntl (POSIX only)")
def _fcntl(mp: Any) -> None:
    from pathlib import Path

    import harness

    root = str(Path(harness.__file__).resolve().parent)
    orig = Path.read_text

    def read_text(self, *a, **kw):
        text = orig(self, *a, **kw)
        return "import fcntl\n" + text if str(self.resolve()).startswith(root) and self.name == "runner.py" else text

    mp.setattr(Path, "read_text", read_text)


@control("experiment-registry-ignored", breaks="the runner knows only its built-in experiments")
def _registry(mp: Any) -> None:
    from harness.techniques import e2e4

    replace_everywhere(mp, e2e4.register_experiment, lambda cls: cls)


@control("chunker-one-chunk-per-page", breaks="each page is indexed as a single chunk")
def _one_chunk(mp: Any) -> None:
    from harness.retrieval import chunking

    orig = chunking.chunk_markdown
    replace_everywhere(mp, orig, lambda text, name, *a, **kw: orig(text, name, *a, **kw)[:1])


@control("index-stores-wrong-vectors", breaks="the index stores each chunk with its neighbour's vector")
def _wrong_vectors(mp: Any) -> None:
    from harness.retrieval.index.lancedb_store import LanceStore

    orig = LanceStore.index

    def index(self, items, embedder, *a, **kw):
        class Rolled:
            name, dim = getattr(embedder, "name", "x") + "+rolled", getattr(embedder, "dim", None)

            def encode(self_, texts):
                return np.roll(embedder.encode(texts), 1, axis=0)

        return orig(self, items, Rolled(), *a, **kw)

    mp.setattr(LanceStore, "index", index)


@control("retrieval-order-random", breaks="retrieved chunks come back in an unseeded random order")
def _random_order(mp: Any) -> None:
    import random

    from harness.techniques.e2e4 import E2Standard

    orig = E2Standard.retrieve

    def retrieve(self, query):
        hits, ms, rr = orig(self, query)
        hits = list(hits)
        random.SystemRandom().shuffle(hits)
        return hits, ms, rr

    mp.setattr(E2Standard, "retrieve", retrieve)


# ---------------------------------------------------------------- calibration of the harness's own statistics
@control("calibrated-tests-liberal", breaks="every test's p-value is a quarter of the true one (a liberal test)")
def _liberal_tests(mp: Any) -> None:
    from harness.stats import calibration as calib

    for name in ("_t_pvalues", "_wilcoxon_pvalues", "_mcnemar_midp", "_permutation_pvalues"):
        orig = getattr(calib, name)
        mp.setattr(calib, name, lambda *a, _f=orig, **k: _f(*a, **k) / 4)


@control("verdict-interval-half-width", breaks="the Student-t verdict interval is half as wide as it should be")
def _narrow_interval(mp: Any) -> None:
    from harness.stats import calibration as calib

    orig = calib._t_bounds

    def half(D, alpha):
        lo, hi = orig(D, alpha)
        mid, rad = (lo + hi) / 2, (hi - lo) / 4
        return mid - rad, mid + rad

    mp.setattr(calib, "_t_bounds", half)


@control("sequential-peeks-unadjusted",
         breaks="the sequential rule looks at every look with the fixed-n interval (peeking without alpha spending)")
def _unadjusted_looks(mp: Any) -> None:
    from harness.stats.sequential import SequentialDesign

    mp.setattr(SequentialDesign, "confidence_at", lambda self, k: 1 - self.alpha)


@control("sequential-single-look", breaks="the sequential design has one look at the most queries (it never stops early)")
def _single_look(mp: Any) -> None:
    from harness.stats.sequential import SequentialDesign

    plan = SequentialDesign.plan.__func__

    def one_look(cls, n_max, **kw):
        return cls((plan(cls, n_max, **kw).looks[-1],), alpha=kw.get("alpha", 0.05), spending=kw.get("spending", "obf"))

    mp.setattr(SequentialDesign, "plan", classmethod(one_look))


# ---------------------------------------------------------------- benchmark-tier controls (run in a fresh process)
@control("clock-runs-1000x-slow", breaks="every perf_counter interval reads 1000x its length (a machine 1000x slower)")
def _slow_clock(mp: Any) -> None:
    import time

    orig = time.perf_counter
    t0 = orig()
    mp.setattr(time, "perf_counter", lambda: t0 + (orig() - t0) * 1000.0)


@control("e2e4-llm-fails-every-fourth", breaks="every fourth answer call of E2/E3/E4 fails for good")
def _e2e4_llm_fails(mp: Any) -> None:
    from harness.llm.client import LLMError
    from harness.techniques.e2e4 import Experiment

    orig, calls = Experiment.generate, {"n": 0}

    def generate(self, query, hits, trace=None):
        calls["n"] += 1
        if calls["n"] % 4 == 0:
            raise LLMError("negative control: the model failed after retries")
        return orig(self, query, hits, trace)

    mp.setattr(Experiment, "generate", generate)


@control("reranker-keeps-input-order", breaks="the reranker returns the first-stage candidates in their order")
def _rerank_noop(mp: Any) -> None:
    from harness.retrieval import rerank

    def keep(self, query, hits, top_k):
        return [rerank.Hit(h.id, h.score, h.text, {**h.metadata, "first_stage_score": h.score,
                                                  "rerank_score": h.score}) for h in list(hits)[:top_k]]

    mp.setattr(rerank._RerankBase, "rerank", keep)


@control("abstention-never-detected", breaks="no answer is read as an abstention")
def _no_abstain(mp: Any) -> None:
    from harness.techniques import e2e4_eval

    replace_everywhere(mp, e2e4_eval.abstains, lambda answer: False)


@control("abstention-detector-loose", breaks="the abstention detector before issue 31: any 'unknown' or "
                                             "'insufficient' anywhere in an answer reads as an abstention")
def _loose_abstain(mp: Any) -> None:
    from harness.metrics import detectors, qa

    replace_everywhere(mp, qa.is_abstention, detectors.loose_abstention)


@control("premise-detector-loose", breaks="the premise detector before issue 31: any negation ('is not', 'never') "
                                          "reads as rejecting the question's premise")
def _loose_premise(mp: Any) -> None:
    from harness.metrics import detectors, qa

    replace_everywhere(mp, qa.rejects_premise, detectors.loose_rejects_premise)


@control("reasoning-detector-counts-echo", breaks="any non-empty E4 reasoning counts, an echoed prompt included")
def _loose_reasoning(mp: Any) -> None:
    from harness.metrics import detectors
    from harness.techniques import e2e4_reasoning

    replace_everywhere(mp, e2e4_reasoning.has_reasoning, detectors.loose_has_reasoning)


@control("specificity-counts-question-words", breaks="E4 reasoning reads as specific when it shares two words with "
                                                     "the question or names a page, an echoed prompt included")
def _loose_specific(mp: Any) -> None:
    from harness.metrics import detectors
    from harness.techniques import e2e4_reasoning

    replace_everywhere(mp, e2e4_reasoning.specific_reasoning, detectors.loose_specific_reasoning)


@control("ret-returns-baseline", breaks="RET-on selects exactly what RET-off selects (the stage is skipped)")
def _ret_baseline(mp: Any) -> None:
    from harness.techniques.ret import RET

    orig = RET.select

    def select(self, question, retriever, **kw):
        off = RET(self.llm, self.config.model_copy(update={"enable_ret": False}), k=self.k, per_query=self.per_query)
        return orig(off, question, retriever, **kw)

    mp.setattr(RET, "select", select)


@control("ret-stage-repeated", breaks="the RET stage makes its model calls three times over")
def _ret_thrice(mp: Any) -> None:
    from harness.techniques import ret

    orig = ret.generate_hypotheses

    def thrice(*a, **kw):
        for _ in range(2):
            orig(*a, **kw)
        return orig(*a, **kw)

    replace_everywhere(mp, orig, thrice)


@control("parallel-retrieval-serial", breaks="multi-query retrieval searches one query after another")
def _serial_retrieval(mp: Any) -> None:
    from harness.retrieval import Retriever

    orig = Retriever.retrieve_many

    def retrieve_many(self, queries, k=10, *, parallel=True):
        return [orig(self, [q], k, parallel=False)[0] for q in queries]  # one embedding call and scan per query

    mp.setattr(Retriever, "retrieve_many", retrieve_many)


# ---------------------------------------------------------------- the report
@control("catalogue-datasets-ignored", breaks="the report reads a claim from whichever of its catalogue datasets "
                                              "ran, with no line for those that did not (the silent subset)")
def _datasets_ignored(mp: Any) -> None:
    from harness.report import summary

    mp.setattr(summary, "_bind_datasets", lambda spec, entries: [])


# ---------------------------------------------------------------- live runs (issue #17)
@control("llm-calls-serialised", breaks="the LLM client lets one call at a time through, whatever its concurrency")
def _serialised(mp: Any) -> None:
    from harness.llm import limits

    orig = limits.AdaptiveLimit.__init__

    def init(self, maximum, **kw):
        orig(self, 1, **kw)

    mp.setattr(limits.AdaptiveLimit, "__init__", init)


@control("rpm-limit-ignored", breaks="the client's requests-per-minute window lets every request through at once")
def _rpm_ignored(mp: Any) -> None:
    from harness.llm import limits

    mp.setattr(limits.RateWindow, "take", lambda self, n=1.0: [self._clock.monotonic(), n])  # a slot, never a wait


@control("rate-window-not-carried", breaks="a resumed run starts with an empty rate window: the requests the killed "
                                           "run sent in its last minute no longer count")
def _window_not_carried(mp: Any) -> None:
    from pathlib import Path

    from harness.llm import limits

    orig = limits.RateWindow.carry

    def carry(self, path):
        Path(path).unlink(missing_ok=True)  # what the killed run left is forgotten; the window is still written
        return orig(self, path)

    mp.setattr(limits.RateWindow, "carry", carry)


@control("server-errors-not-retried", breaks="a 500 or a timeout is a permanent failure (no 1/2/4 s retries)")
def _no_retry(mp: Any) -> None:
    from harness.llm import client

    orig = client._retryable

    def retryable(exc):
        _, status = orig(exc)
        return False, status

    mp.setattr(client, "_retryable", retryable)


@control("budget-cap-ignored", breaks="the run's cost cap never refuses a call (spend is recorded, nothing stops)")
def _cap_ignored(mp: Any) -> None:
    from harness.llm import spend

    def reserve(self, usd):
        with self._lock:
            self.in_flight_usd += usd
        return usd

    mp.setattr(spend.Spend, "reserve", reserve)


@control("estimate-prompt-tokens-ignored", breaks="the cost estimate counts answers only, not the prompts sent")
def _estimate_no_prompt(mp: Any) -> None:
    from harness.llm import estimate

    orig = estimate.token_counter

    def token_counter(model):
        count, name = orig(model)
        return (lambda x: count(x) if isinstance(x, str) else 0), name

    mp.setattr(estimate, "token_counter", token_counter)


@control("int8-embedder-truncates", breaks="the int8 ONNX embedder reads only the first 8 tokens of each text")
def _int8_truncates(mp: Any) -> None:
    from harness.retrieval import embed

    orig = embed.OnnxMiniLMEmbedder.__init__

    def init(self, *a, **kw):
        orig(self, *a, **kw)
        self.tokenizer.enable_truncation(8)

    mp.setattr(embed.OnnxMiniLMEmbedder, "__init__", init)


# ---------------------------------------------------------------- judge metrics and reliability
@control("faithfulness-counts-any-support-as-full", breaks="faithfulness reads 1 when any claim is supported")
def _faith_any(mp: Any) -> None:
    from harness.judge import metrics

    replace_everywhere(mp, metrics.faithfulness,
                       lambda verdicts: (1.0 if any(verdicts) else 0.0) if len(verdicts) else float("nan"))


@control("context-precision-ignores-rank", breaks="context precision is relevant / retrieved, whatever their ranks")
def _ctx_precision_flat(mp: Any) -> None:
    from harness.judge import metrics

    replace_everywhere(mp, metrics.context_precision,
                       lambda ranked, relevant: sum(d in relevant for d in ranked) / len(ranked) if ranked else 0.0)


@control("kappa-ignores-chance", breaks="Cohen's kappa is the raw agreement (no chance correction)")
def _kappa_raw(mp: Any) -> None:
    from harness.judge import reliability

    replace_everywhere(mp, reliability.cohen_kappa,
                       lambda a, b: sum(x == y for x, y in zip(a, b)) / len(a) if len(a) else float("nan"))


@control("lexical-judge-sees-no-context", breaks="the lexical baseline checks each claim against an empty context")
def _lexical_blind(mp: Any) -> None:
    from harness.judge import claims

    orig = claims.lexical_support
    replace_everywhere(mp, orig, lambda claim, context, **kw: orig(claim, "", **kw))


@control("unreliable-judge-not-flagged", breaks="no judge is ever flagged unreliable")
def _judge_never_flagged(mp: Any) -> None:
    from harness.judge.reliability import JudgeReliability

    mp.setattr(JudgeReliability, "reasons", property(lambda self: []))


@control("judge-sees-no-context", breaks="the LLM judge is shown an empty context for every claim")
def _judge_blind(mp: Any) -> None:
    import dataclasses

    from harness.judge.llm_judge import LLMJudge

    orig = LLMJudge.rule  # `supported` rules through `rule` too
    mp.setattr(LLMJudge, "rule", lambda self, item, **kw: orig(self, dataclasses.replace(item, context=""), **kw))


@control("judge-one-label", breaks="the LLM judge calls every claim supported, whatever the claim and its context "
                                   "(no model call)")
def _judge_one_label(mp: Any) -> None:
    from harness.judge.llm_judge import LLMJudge, Ruling

    def rule(self, item, *, seed=None, fresh=False, recheck=False):
        return Ruling(True, "recheck" if recheck else "support", "(no call)", 0.0, seed, False)

    mp.setattr(LLMJudge, "rule", rule)


@control("judge-second-ruling-random", breaks="the judge's second (recheck) rulings are coin flips")
def _judge_coin(mp: Any) -> None:
    import random

    from harness.judge.llm_judge import LLMJudge, Ruling

    orig, rng = LLMJudge.rule, random.Random(0)

    def rule(self, item, *, seed=None, fresh=False, recheck=False):
        if recheck:
            return Ruling(rng.random() < 0.5, "recheck", f"(coin {rng.random()})", 1.0, seed, False)
        return orig(self, item, seed=seed, fresh=fresh)

    mp.setattr(LLMJudge, "rule", rule)


@control("judge-recheck-repeats-first-ruling", breaks="the judge's second ruling repeats the first call (first "
         "wording, first temperature and seed, answerable from the cache) instead of a perturbed re-ruling")
def _judge_recheck_repeats(mp: Any) -> None:
    from harness.judge.llm_judge import LLMJudge

    orig = LLMJudge.rule

    def rule(self, item, *, seed=None, fresh=False, recheck=False):
        if recheck:  # the recheck pass asks with seed + 1: back to the first ruling's request
            return orig(self, item, seed=None if seed is None else seed - 1)
        return orig(self, item, seed=seed, fresh=fresh)

    mp.setattr(LLMJudge, "rule", rule)


@control("e3-answers-without-context", breaks="E3 generates from no sources (its reranked chunks are retrieved, not given)")
def _e3_blind(mp: Any) -> None:
    from harness.techniques import e2e4

    mp.setattr(e2e4.E3Filtered, "generate",
               lambda self, query, hits, trace=None: e2e4.Experiment.generate(self, query, [], trace))


@control("e4-answers-without-context", breaks="E4 generates from no sources (its reranked chunks are retrieved, not given)")
def _e4_blind(mp: Any) -> None:
    from harness.techniques import e2e4

    orig = e2e4.E4Reasoning.generate
    mp.setattr(e2e4.E4Reasoning, "generate", lambda self, query, hits, trace=None: orig(self, query, [], trace))


@control("ann-search-reversed", breaks="ANN vector search returns its neighbours in reverse order (the nearest last)")
def _ann_reversed(mp: Any) -> None:
    from harness.retrieval.index.lancedb_store import LanceStore

    orig = LanceStore.search_vectors

    def search_vectors(self, vectors, k=10, *, exact=None):
        out = orig(self, vectors, k, exact=exact)
        through_ann = exact is False or (exact is None and self.ann is not None)
        return [list(reversed(hits)) for hits in out] if through_ann else out

    mp.setattr(LanceStore, "search_vectors", search_vectors)


@control("lexical-baseline-inverted", breaks="the judge-free lexical baseline rules every claim the opposite way")
def _lexical_inverted(mp: Any) -> None:
    from harness.judge.llm_judge import LexicalJudge

    orig = LexicalJudge.supported

    def supported(self, item, **kw):
        verdict = orig(self, item, **kw)
        return None if verdict is None else not verdict

    mp.setattr(LexicalJudge, "supported", supported)
