"""WSOP-001..008: routing, full pipeline, fallback, credibility, citations, degradation, fusion."""
from __future__ import annotations

import re
from typing import Callable

import numpy as np
import pytest

from harness.config import WSOPConfig
from harness.retrieval.index.lancedb_store import LanceStore
from harness.retrieval import Retriever
from harness.techniques.crag import RetrievalEvaluator
from harness.techniques.generation import cited_numbers, citations_resolve, sources_in_prompt
from harness.techniques.wsop import (ComplexityClassifier, WSOPPipeline, classifier_accuracy, credibility_tier,
                                    cross_validated_accuracy)
from harness.types import Hit

pytestmark = pytest.mark.unit

SCRIPT = {
    "Generate": "boundary layer separation\ncritical angle of attack\nlift loss after stall",
    "Rewrite:": "wing stall causes boundary layer",
    "Write a passage": "A wing stalls when the boundary layer separates at a high angle of attack.",
    "Sources:": "The wing stalls because the flow separates [1].",
}
COMPLEX = ("Compare the causes of wing stall at low and high Reynolds number, and explain how boundary layer "
           "separation and the angle of attack interact with wing sweep and thickness.")


def scorer(value: float):
    return lambda q, texts: np.full(len(texts), value)


@pytest.fixture
def pipeline(rag_scripted_llm, unit_retriever, unit_web):
    def make(conf: float = 0.9, retriever=None):
        return WSOPPipeline(WSOPConfig(), rag_scripted_llm(SCRIPT, name="wsop"), retriever or unit_retriever, unit_web,
                            RetrievalEvaluator(scorer(conf)), embedder=unit_retriever.embedder)
    return make


@pytest.mark.spec("WSOP-001")
def test_simple_queries_skip_expansion(pipeline, rag_check):
    res = pipeline().search("What is the return window?")
    rag_check("WSOP-001", res.trace.called("hyde") or res.trace.called("hyde_generate"), complexity=res.complexity)
    assert res.complexity == "simple" and res.sources


@pytest.mark.spec("WSOP-002")
def test_complex_queries_use_all_four(pipeline, rag_check):
    res = pipeline(conf=0.5).search(COMPLEX)
    assert res.complexity == "complex"
    engaged = sorted(t for t in ("crag", "fusion", "hyde", "rewrite") if res.trace.called(t))
    rag_check("WSOP-002", engaged)


@pytest.mark.spec("WSOP-003")
@pytest.mark.parametrize("complexity", ["moderate", "complex"])
def test_fallback_on_low_confidence(pipeline, unit_web, complexity, rag_check):
    res = pipeline(conf=0.2).search("why does a wing stall at high angle of attack", complexity)
    crag = next(e for e in res.trace.events if e["name"] == "crag")
    rag_check("WSOP-003", res.trace.called("web_search") and unit_web.calls == 1, confidence=crag["confidence"],
          web_calls=unit_web.calls)
    assert crag["confidence"] < 0.3
    assert any(s.metadata["source"] == "web" for s in res.sources)


@pytest.mark.spec("WSOP-003")
def test_no_fallback_on_high_confidence(pipeline, unit_web):
    res = pipeline(conf=0.9).search("why does a wing stall", "moderate")
    assert not res.trace.called("web_search") and unit_web.calls == 0


@pytest.mark.spec("WSOP-004")
@pytest.mark.parametrize("complexity, conf", [("simple", 0.9), ("moderate", 0.1), ("complex", 0.1)])
def test_every_source_has_a_credibility_tier(pipeline, complexity, conf, rag_check):
    res = pipeline(conf=conf).search("does the warranty cover accidental damage", complexity)
    tiers = [s.metadata.get("credibility") for s in res.sources]
    assert res.sources and set(tiers) <= {"high", "medium", "low"}
    expected = [expected_tier(s.metadata) for s in res.sources]
    rag_check("WSOP-004", sum(t == e for t, e in zip(tiers, expected)) / len(tiers), tiers=tiers, expected=expected)


def expected_tier(meta: dict) -> str:
    """The protocol's rule, written out independently: the curated corpus and .gov/.edu are high, reference
    domains (.org, wikipedia) medium, any other web domain low (the unit web backend is web.local: low)."""
    if meta.get("source", "corpus") == "corpus":
        return "high"
    domain = meta.get("domain", "")
    tld = domain.rsplit(".", 1)[-1]
    return "high" if tld in ("gov", "edu", "int", "mil") else "medium" if tld == "org" else "low"


def test_credibility_rules():
    assert credibility_tier(Hit("a", 0, "", {"source": "corpus"})) == "high"
    assert credibility_tier(Hit("a", 0, "", {"source": "web", "domain": "www.grc.nasa.gov"})) == "high"
    assert credibility_tier(Hit("a", 0, "", {"source": "web", "domain": "en.wikipedia.org"})) == "medium"
    assert credibility_tier(Hit("a", 0, "", {"source": "web", "domain": "help.example.com"})) == "low"


def citing_answerer(prompts: list[str]) -> Callable[[str], str]:
    """A scripted answerer: records each prompt, cites by its number the source about stalls (else the first)."""
    def answer(message: str) -> str:
        prompts.append(message)
        numbered = re.findall(r"(?m)^\[(\d+)\] (.*)$", message)
        cite = next((n for n, text in numbered if "stall" in text.lower()), numbered[0][0] if numbered else None)
        return "The wing stalls because the flow separates" + (f" [{cite}]." if cite is not None else ".")
    return answer


@pytest.mark.spec("WSOP-005")
def test_answer_cites_sources(rag_scripted_llm, unit_retriever, unit_web, rag_check):
    """The answer's citations, read against the prompt actually sent: each [n] names the list's [n] there."""
    prompts: list[str] = []
    llm = rag_scripted_llm({**SCRIPT, "Sources:": citing_answerer(prompts)}, name="wsop-cites")
    pipe = WSOPPipeline(WSOPConfig(), llm, unit_retriever, unit_web, RetrievalEvaluator(scorer(0.9)),
                        embedder=unit_retriever.embedder)
    res = pipe.search("why does a wing stall", "moderate")
    text, _, listing = res.answer.rpartition("\n\nSources:\n")
    assert len(prompts) == 1, "one answer prompt sent"
    rag_check("WSOP-005", citations_resolve(text, prompts[0], res.sources), cited=cited_numbers(text),
          numbered_in_prompt=sorted(sources_in_prompt(prompts[0])), sources=len(res.sources))
    assert all(f"[{i}]" in listing for i in range(1, len(res.sources) + 1))


def test_citations_resolve_against_the_prompt_sent():
    """Hand-computed: a citation counts only when the prompt numbered that source under that number."""
    hits = [Hit("a", 1, "Wings stall at high angles."), Hit("b", 1, "Refunds take five days.")]
    prompt = "Sources:\n[1] Wings stall at high angles.\n[2] Refunds take five days.\n\nQuestion: q\nAnswer:"
    assert sources_in_prompt(prompt) == {1: "Wings stall at high angles.", 2: "Refunds take five days."}
    assert cited_numbers("x [2] y [1, 3] z [2]") == [2, 1, 3]
    assert citations_resolve("They stall [1].", prompt, hits)
    assert not citations_resolve("They stall.", prompt, hits)  # no citation
    assert not citations_resolve("They stall [3].", prompt, hits)  # a number the prompt never gave
    assert not citations_resolve("They stall [1].", prompt, hits[::-1])  # [1] is another source in the list
    assert not citations_resolve("They stall [1].", "Sources:\n\nQuestion: q\nAnswer:", hits)  # nothing numbered
    from_0 = "Sources:\n[0] Wings stall at high angles.\n[1] Refunds take five days.\n\nQuestion: q"
    assert not citations_resolve("They stall [0].", from_0, hits) and not citations_resolve("[1]", from_0, hits)


@pytest.mark.spec("WSOP-006")
def test_work_grows_with_complexity(pipeline):
    calls = {}
    for level in ("simple", "moderate", "complex"):
        res = pipeline(conf=0.5).search("why does a wing stall at high angle of attack", level)
        calls[level] = (res.trace.llm_calls, len(res.trace.stages))
    assert calls["simple"] < calls["moderate"] < calls["complex"]


@pytest.mark.spec("WSOP-007")
def test_empty_index_degrades_gracefully(pipeline, rag_hashing_embedder, tmp_path, rag_check):
    empty = Retriever(LanceStore(tmp_path / "empty", "nothing"), rag_hashing_embedder)
    results = []
    for level in ("simple", "moderate", "complex"):
        res = pipeline(conf=0.9, retriever=empty).search("anything at all", level)
        results.append(res.degraded and not res.sources and "could not find" in res.answer)
    rag_check("WSOP-007", all(results))


@pytest.mark.spec("WSOP-008")
def test_fusion_applied_to_multi_query_results(pipeline, rag_check):
    res = pipeline(conf=0.9).search(COMPLEX, "complex")
    fusion = next((e for e in res.trace.events if e["name"] == "fusion"), None)
    ranks = [s.metadata.get("rrf_ranks") for s in res.sources]
    fused = fusion is not None and fusion["lists"] == 3 and bool(ranks) and all(
        r is not None and len(r) == 3 and any(x is not None for x in r) for r in ranks)
    rag_check("WSOP-008", fused, lists=fusion and fusion["lists"], ranks=ranks)


def test_classifier_routes_with_thresholds():
    clf = ComplexityClassifier.from_jsonl()
    assert clf.classify("What is lift?") == "simple"
    assert clf.classify(COMPLEX) == "complex"
    s = clf.score("How does a jet engine produce thrust?")
    assert 0.0 <= s <= 1.0
    assert classifier_accuracy(clf, [("What is lift?", "simple"), (COMPLEX, "complex")]) == 1.0


def test_router_accuracy_is_measured_on_held_out_queries():
    """5-fold cross-validated routing accuracy of the shipped examples (0.95 measured with seed 0); with the
    labels shuffled the same measurement falls to chance, so the check can fail."""
    import json
    import random
    from importlib import resources

    rows = [json.loads(x) for x in resources.files("harness.techniques").joinpath("complexity_queries.jsonl")
            .read_text(encoding="utf-8").splitlines() if x.strip()]
    examples = [(r["query"], r["label"]) for r in rows]
    assert cross_validated_accuracy(examples, seed=0) >= 0.85
    labels = [lab for _, lab in examples]
    random.Random(1).shuffle(labels)
    assert cross_validated_accuracy([(q, lab) for (q, _), lab in zip(examples, labels)], seed=0) < 0.6
