"""Score TREC run files with the harness's metrics, alone or paired against a baseline run
(`ragharness eval RUN QRELS [-m nDCG@10 ...] [--baseline-run FILE]`)."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np

from harness.data.trec import read_qrels, read_trec_run
from harness.metrics._ranking import RunLike, order_run
from harness.metrics._registry import aggregates, evaluate, summarize
from harness.stats._effect import Effect, paired_effect

DEFAULT_MEASURES = ("nDCG@10", "Recall@10", "Recall@100", "MRR@10", "MAP@100")


@dataclass
class RunScores:
    """Per-query values (in sorted qrels order) and means of each measure; `queries` is what they average over."""

    queries: list[str]
    per_query: dict[str, np.ndarray]
    aggregate: dict[str, str] = field(default_factory=dict)  # measure -> mean | sum | geometric (default mean)
    missing: int = 0  # judged queries the run does not hold (each scored 0)

    @property
    def means(self) -> dict[str, float]:
        return {m: float(v.mean()) if len(v) else 0.0 for m, v in self.per_query.items()}

    @property
    def summary(self) -> dict[str, float]:
        """Each measure over the queries as trec_eval's `all` line: a mean, the counts summed, gm_* geometric."""
        return {m: summarize(v, self.aggregate.get(m, "mean")) for m, v in self.per_query.items()}



def score_run(run_path: str | Path, qrels_path: str | Path, measures: Sequence[str] = DEFAULT_MEASURES, *,
              relevance_level: int = 1, max_docs: int | None = None) -> RunScores:
    """Every measure for every judged query (missing from the run: 0, as `trec_eval -c`); -l and -M as trec_eval's;
    qrels in TREC or BEIR layout."""
    qrels = read_qrels(qrels_path)
    scored = read_trec_run(run_path)
    run: RunLike = scored
    if max_docs is not None:
        if max_docs < 0:
            raise ValueError(f"max_docs must be >= 0, got {max_docs}")
        run = {q: order_run(docs)[:max_docs] for q, docs in scored.items()}
    return RunScores(sorted(qrels), evaluate(qrels, run, measures, level=relevance_level), dict(aggregates(measures)),
                     sum(q not in run for q in qrels))


def compare_runs(run_path: str | Path, baseline_path: str | Path, qrels_path: str | Path,
                 measures: Sequence[str] = DEFAULT_MEASURES, *, seed: int = 0, relevance_level: int = 1,
                 max_docs: int | None = None) -> dict[str, Effect]:
    """The paired effect (mean difference, its interval and p-values) of a run over a baseline run, per measure,
    over the same judged queries: the statistics behind the built-in comparisons' verdicts."""
    return paired_effects(score_run(run_path, qrels_path, measures, relevance_level=relevance_level, max_docs=max_docs),
                          score_run(baseline_path, qrels_path, measures, relevance_level=relevance_level,
                                    max_docs=max_docs), seed=seed)


def paired_effects(candidate: RunScores, baseline: RunScores, *, seed: int = 0) -> dict[str, Effect]:
    """`compare_runs` for runs already scored (against the same qrels)."""
    if candidate.queries != baseline.queries:
        raise ValueError("paired effects need both runs scored on the same judged queries")
    return {m: paired_effect(candidate.per_query[m], baseline.per_query[m], seed=seed) for m in candidate.per_query}
