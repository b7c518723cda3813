"""Score TREC run files with the harness's metrics, alone or paired against a baseline run
(`rag-harness eval RUN QRELS [-m nDCG@10 ...] [--baseline-run FILE]`)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from harness.data.trec import read_qrels, read_trec_run
from harness.metrics.registry import evaluate
from harness.stats.effect import Effect, paired_effect

DEFAULT_MEASURES = ("nDCG@10", "Recall@10", "Recall@100", "MRR@10", "MAP@100")


@dataclass
class RunScores:
    """Per-query values (in sorted qrels order) and means of each measure; `queries` is what they average over."""

    queries: list[str]
    per_query: dict[str, np.ndarray]

    @property
    def means(self) -> dict[str, float]:
        return {m: float(v.mean()) if len(v) else 0.0 for m, v in self.per_query.items()}


def score_run(run_path: str | Path, qrels_path: str | Path, measures: Sequence[str] = DEFAULT_MEASURES) -> RunScores:
    """Every measure for every judged query (a judged query missing from the run scores 0, as `trec_eval -c`);
    qrels in TREC or BEIR layout."""
    qrels = read_qrels(qrels_path)
    run = read_trec_run(run_path)
    return RunScores(sorted(qrels), evaluate(qrels, run, measures))


def compare_runs(run_path: str | Path, baseline_path: str | Path, qrels_path: str | Path,
                 measures: Sequence[str] = DEFAULT_MEASURES, *, seed: int = 0) -> dict[str, Effect]:
    """The paired effect (mean difference, its interval and p-values) of a run over a baseline run, per measure,
    over the same judged queries: the statistics behind the built-in comparisons' verdicts."""
    return paired_effects(score_run(run_path, qrels_path, measures), score_run(baseline_path, qrels_path, measures),
                          seed=seed)


def paired_effects(candidate: RunScores, baseline: RunScores, *, seed: int = 0) -> dict[str, Effect]:
    """`compare_runs` for runs already scored (against the same qrels)."""
    if candidate.queries != baseline.queries:
        raise ValueError("paired effects need both runs scored on the same judged queries")
    return {m: paired_effect(candidate.per_query[m], baseline.per_query[m], seed=seed) for m in candidate.per_query}
