"""The negative controls of RAGF-003 (ranking stability) and RAGF-006 (pipeline latency) move the quantities
those benchmark claims measure. The claims need a live model; here the same measurement runs on the scripted
model and the unit corpus, with a virtual clock standing in for the model's time in RAGF-006."""
from __future__ import annotations

import numpy as np
import pytest

from harness.prompts import load_prompts, render
from harness.stats.latency import interleaved_ratio
from harness.techniques.generation import numbered_sources
from harness.techniques._registry import build_technique
from tests.technique_kit import SCRIPT, Recorder, make_services

pytestmark = pytest.mark.unit
QUERIES = ["why does a wing stall at high angle of attack", "how long is the return window",
           "what causes boundary layer separation", "when do stores open", "how is lift produced"]


def _ranking_variance(fusion, queries: list[str], runs: int = 3) -> float:
    """RAGF-003's figure as harness/protocol/test_protocol_techniques.py computes it: 1 - mean pairwise top-10 overlap."""
    variances = []
    for q in queries:
        tops = [set(fusion.run(q).ids[:10]) for _ in range(runs)]
        overlaps = [len(a & b) / 10 for i, a in enumerate(tops) for b in tops[i + 1:]]
        variances.append(1 - float(np.mean(overlaps)))
    return float(np.mean(variances))


def test_random_merge_makes_fusion_rankings_unstable(tmp_path, under):
    """Real RRF over the same lists gives the same top 10 every run: 0.0. The random merge draws each run's top
    10 from the union of the lists (here at least 12 of the 16 unit documents), so two runs share on average
    10·10/U <= 8.3 of them; all 15 pairs would need > 9.5 shared for the figure to stay under 0.05."""
    services, _ = make_services(tmp_path, name="ctl-ragf3")
    fusion = build_technique("rag-fusion", services)
    assert _ranking_variance(fusion, QUERIES) == 0.0
    union = min(len({h.id for p in fusion.fusion.search(q).per_query for h in p}) for q in QUERIES)
    assert union >= 12
    under("fusion-merge-random")
    broken = _ranking_variance(fusion, QUERIES)
    assert broken > 0.05, f"RAGF-003 (< 0.05) would survive its control: {broken}"


class _TimedModel(Recorder):
    """The scripted model on a virtual clock: each call advances it by what the call would cost."""

    def __init__(self) -> None:
        super().__init__(SCRIPT)
        self.now = 0.0

    def clock(self) -> float:
        return self.now

    def __call__(self, messages, params) -> str:
        last = messages[-1]["content"]
        self.now += 0.5 if "Generate" in last else 1.0 if "Based on the following sources" in last else 0.0
        return super().__call__(messages, params)

    def generations(self) -> int:
        return sum("Generate" in last for last, _ in self.calls)


def test_one_generation_call_per_query_makes_the_fusion_pipeline_slower(tmp_path, under):
    """The model's time dominates both pipelines: an answer costs 1.0 s, a multi-query generation 0.5 s,
    retrieval nothing. Single-query RAG: 1.0 s; RAG-Fusion: 0.5 + 1.0 = 1.5 s, ratio 1.5 < 1.77. Under the
    control fusion makes num_queries = 4 generation calls: 4 x 0.5 + 1.0 = 3.0 s, ratio 3.0 >= 1.77."""
    model = _TimedModel()
    services, _ = make_services(tmp_path, name="ctl-ragf6", recorder=model)
    fusion = build_technique("rag-fusion", services)
    llm, retriever = services.llm, services.retriever

    def answer(q, hits):
        prompt = render(load_prompts("fusion")["answer"]["user"], sources=numbered_sources(hits, max_chars=600),
                        query=q)
        return llm.complete(prompt, max_tokens=96, use_cache=False).text

    def ratio() -> float:
        return interleaved_ratio(lambda q: answer(q, retriever.retrieve(q, 5)),
                                 lambda q: answer(q, fusion.run(q).hits[:5]), QUERIES, clock=model.clock).median

    assert ratio() == 1.5 and model.generations() == 1 + len(QUERIES)  # the warm-up round, then one per query
    under("fusion-query-generation-per-query")
    assert ratio() == 3.0 and model.generations() == (1 + 4) * (1 + len(QUERIES))  # then 4 per query
