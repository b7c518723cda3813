"""RET's evaluation gates (ret-retrograde-evidence-triangulation, evaluation plan 1-6) as pure functions over
matched pairs: one `ArmRun` per question and arm (RET off / on), same model, same seed.

Each gate measures what the proposal names, on the subset it names:
- GATE-2: answer-relevant documents in the top 10, on the questions the baseline answers *wrongly*;
- GATE-3: Kendall's tau per question, paired (both arms defined), undefined questions counted, never 0.0;
- GATE-4: the top-coverage hypothesis is mapped to the MCQ option it matches best (token F1), not by substring;
- GATE-5: added cost in USD of the whole run (RET calls and the coverage table in the synthesis prompt)
  over the baseline run's cost; unknown when any call is unpriced;
- GATE-6: added wall time of every call (select, choose/answer) per pair.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from harness.metrics.text import token_f1
from harness.stats.paired import kendall_tau


@dataclass
class ArmRun:
    """One question under one arm: correctness, the answer relevance of its ranked documents, wall time, cost."""

    question_id: str
    correct: bool
    relevance: list[int] = field(default_factory=list)  # 1 = answer-relevant, in selection rank order
    seconds: float = 0.0  # wall time of the whole run: retrieval, RET calls, synthesis / choice
    cost_usd: float | None = 0.0  # None: a call in the run had no price
    tokens: int = 0


@dataclass
class GateFigure:
    value: float  # nan when the data cannot define it
    n: int  # questions the figure is computed on
    detail: dict = field(default_factory=dict)


def _pairs(off: Sequence[ArmRun], on: Sequence[ArmRun]) -> list[tuple[ArmRun, ArmRun]]:
    by_id = {r.question_id: r for r in off}
    if len(by_id) != len(off) or {r.question_id for r in on} != set(by_id):
        raise ValueError("RET gates need matched pairs: the same questions, once each, in both arms")
    return [(by_id[r.question_id], r) for r in on]


def fingerprint_recall_lift(off: Sequence[ArmRun], on: Sequence[ArmRun], *, k: int = 10) -> GateFigure:
    """GATE-2: answer-relevant documents in the top k under RET / under the baseline, on the questions the
    baseline answers wrongly; nan when the baseline finds none there."""
    wrong = [(a, b) for a, b in _pairs(off, on) if not a.correct]
    hits_off = sum(sum(a.relevance[:k]) for a, _ in wrong)
    hits_on = sum(sum(b.relevance[:k]) for _, b in wrong)
    lift = hits_on / hits_off if hits_off else float("nan")
    return GateFigure(lift, len(wrong), {"relevant_docs_off": hits_off, "relevant_docs_on": hits_on,
                                          "baseline_wrong": len(wrong)})


def selection_tau(relevance: Sequence[int]) -> float:
    """Kendall's tau-b between selection rank (1 = best) and the binary label; nan when all labels agree."""
    labels = list(relevance)
    return kendall_tau([-i for i in range(len(labels))], labels)  # nan for constant (or fewer than 2) labels


def paired_taus(off: Sequence[ArmRun], on: Sequence[ArmRun], *, k: int = 10) -> tuple[np.ndarray, np.ndarray, dict]:
    """GATE-3: per-question tau under each arm, kept only where both are defined; the counts of undefined ones."""
    t_off, t_on, undefined = [], [], {"off_only": 0, "on_only": 0, "both": 0}
    for a, b in _pairs(off, on):
        x, y = selection_tau(a.relevance[:k]), selection_tau(b.relevance[:k])
        if math.isnan(x) or math.isnan(y):
            key = "both" if math.isnan(x) and math.isnan(y) else ("off_only" if math.isnan(x) else "on_only")
            undefined[key] += 1
            continue
        t_off.append(x)
        t_on.append(y)
    return np.array(t_on), np.array(t_off), undefined


def hypothesis_option(hypothesis: str, options: Sequence[str]) -> int | None:
    """The option a hypothesis names: the one with the highest token F1; None when none overlaps or two tie."""
    scores = [token_f1(hypothesis, o) for o in options]
    best = max(scores, default=0.0)
    if best <= 0.0 or scores.count(best) > 1:
        return None
    return scores.index(best)


def added_cost_ratio(off: Sequence[ArmRun], on: Sequence[ArmRun]) -> GateFigure:
    """GATE-5: (cost of the RET runs - cost of the baseline runs) / cost of the baseline runs, in USD;
    nan when a call was unpriced or the baseline cost nothing."""
    pairs = _pairs(off, on)
    unpriced = sum(r.cost_usd is None for p in pairs for r in p)
    base = sum(a.cost_usd or 0.0 for a, _ in pairs)
    added = sum(b.cost_usd or 0.0 for _, b in pairs) - base
    value = added / base if base > 0 and not unpriced else float("nan")
    return GateFigure(value, len(pairs), {"baseline_cost_usd": base, "added_cost_usd": added,
                                          "unpriced_runs": unpriced,
                                          "added_tokens": sum(b.tokens - a.tokens for a, b in pairs),
                                          "baseline_tokens": sum(a.tokens for a, _ in pairs)})


def added_latency(off: Sequence[ArmRun], on: Sequence[ArmRun]) -> GateFigure:
    """GATE-6: median over questions of (RET wall time - baseline wall time), in seconds."""
    added = [b.seconds - a.seconds for a, b in _pairs(off, on)]
    return GateFigure(statistics.median(added) if added else float("nan"), len(added),
                      {"median_off_s": statistics.median([a.seconds for a in off]) if off else float("nan"),
                       "median_on_s": statistics.median([b.seconds for b in on]) if on else float("nan")})
