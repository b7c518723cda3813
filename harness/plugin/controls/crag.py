"""Negative controls for cRAG: the retrieval evaluator, the corrective actions and knowledge refinement."""
from __future__ import annotations

from typing import Any

import numpy as np

from harness.plugin.controls.registry import control, replace_everywhere


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
