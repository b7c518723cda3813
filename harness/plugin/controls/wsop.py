"""Negative controls for the WSOP routed pipeline: the complexity router, its paths, web fallback, sources and
degradation."""
from __future__ import annotations

from typing import Any

from harness.plugin.controls.registry import control, replace_everywhere


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
