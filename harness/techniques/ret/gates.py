"""RET's evaluation gates (ret-retrograde-evidence-triangulation, evaluation plan 1-6) as pure functions over
matched pairs: one `ArmRun` per question and arm (RET off / on), same model, same seed.

Each gate measures what the proposal names, on the subset it names:
- GATE-2: answer-relevant documents in the top 10, on the questions the baseline answers *wrongly*;
- GATE-3: Kendall's tau per question, paired; an arm whose top 10 lost every answer-relevant passage the other
  arm kept scores -1 (the worst), never dropped; questions undefined alike in both arms are counted, left out;
- GATE-4: the top-coverage hypothesis (none on a tie for the top) is mapped to the MCQ option it matches best
  (token F1), not by substring;
- GATE-5: added cost in USD of the whole run (RET calls and the coverage table in the synthesis prompt)
  over the baseline run's cost; unknown when any call is unpriced;
- GATE-6: added wall time of every call (select, choose/answer) per pair.

Every figure carries `fallback_rate`, the share of its questions where RET did not run (skipped for any reason)
or an arm absorbed an LLM error: handed to the check, it keeps a gate from passing on a run where RET did not run.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from harness.metrics._text import token_f1
from harness.stats._paired import kendall_tau
from harness.techniques.ret.triangulation import RetResult, fingerprint_coverage
from harness.types import Trace


@dataclass
class ArmRun:
    """One question under one arm: correctness, the answer relevance of its ranked documents, wall time, cost."""

    question_id: str
    correct: bool
    relevance: list[int] = field(default_factory=list)  # 1 = answer-relevant, in selection rank order
    seconds: float = 0.0  # wall time of the whole run: retrieval, RET calls, synthesis / choice
    cost_usd: float | None = 0.0  # None: a call in the run had no price
    tokens: int = 0
    fell_back: bool = False  # RET did not run its stage (RET-on arm: any skip) or the run absorbed an LLM error


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


def run_fell_back(res: RetResult, trace: Trace, *, ret_on: bool) -> bool:
    """Whether a run measured the fallback: RET skipped in the RET-on arm (any reason, `budget` included), or the
    run absorbed an LLM error (an `*_error` event) in either arm."""
    return (ret_on and res.skip_reason is not None) or any(e["name"].endswith("_error") for e in trace.events)


def fallback_rate(off: Sequence[ArmRun], on: Sequence[ArmRun]) -> float:
    """The share of matched questions on which either arm fell back (`ArmRun.fell_back`); nan for none."""
    pairs = _pairs(off, on)
    return sum(a.fell_back or b.fell_back for a, b in pairs) / len(pairs) if pairs else float("nan")


def fingerprint_recall_lift(off: Sequence[ArmRun], on: Sequence[ArmRun], *, k: int = 10) -> GateFigure:
    """GATE-2: answer-relevant documents in the top k under RET / under the baseline, on the questions the
    baseline answers wrongly; nan when the baseline finds none there."""
    wrong = [(a, b) for a, b in _pairs(off, on) if not a.correct]
    hits_off = sum(sum(a.relevance[:k]) for a, _ in wrong)
    hits_on = sum(sum(b.relevance[:k]) for _, b in wrong)
    lift = hits_on / hits_off if hits_off else float("nan")
    return GateFigure(lift, len(wrong), {"relevant_docs_off": hits_off, "relevant_docs_on": hits_on,
                                          "baseline_wrong": len(wrong),
                                          "fallback_rate": fallback_rate([a for a, _ in wrong], [b for _, b in wrong])})


def selection_tau(relevance: Sequence[int]) -> float:
    """Kendall's tau-b between selection rank (1 = best) and the binary label; nan when all labels agree."""
    labels = list(relevance)
    return kendall_tau([-i for i in range(len(labels))], labels)  # nan for constant (or fewer than 2) labels


def _extreme(relevance: Sequence[int]) -> float:
    """The tau an undefined selection stands for: -1 without an answer-relevant passage, +1 with only such ones."""
    return 1.0 if any(relevance) else -1.0


def gate_tau(relevance: Sequence[int], other: Sequence[int]) -> float:
    """GATE-3's tau of one arm's top k, given the other arm's: `selection_tau` where defined; else -1 when the arm
    selected no answer-relevant passage (the gold left its top k: the worst outcome, below the gold at rank k),
    +1 when it selected only answer-relevant ones (the best); nan when the other arm is undefined alike (the
    question cannot tell the arms apart)."""
    tau = selection_tau(relevance)
    if not math.isnan(tau):
        return tau
    if math.isnan(selection_tau(other)) and _extreme(other) == _extreme(relevance):
        return float("nan")
    return _extreme(relevance)


def paired_taus(off: Sequence[ArmRun], on: Sequence[ArmRun], *, k: int = 10) -> tuple[np.ndarray, np.ndarray, dict]:
    """GATE-3: per-question `gate_tau` under each arm (a question whose gold passage left one arm's top k scores -1
    there, never dropped); questions undefined alike in both arms left out. The counts: `dropped`, and per arm the
    questions scored -1 (`no_gold_*`) or +1 (`all_gold_*`) by the rule."""
    t_off, t_on = [], []
    counts = {"dropped": 0, "no_gold_off": 0, "no_gold_on": 0, "all_gold_off": 0, "all_gold_on": 0}
    for a, b in _pairs(off, on):
        ra, rb = a.relevance[:k], b.relevance[:k]
        x, y = gate_tau(ra, rb), gate_tau(rb, ra)
        if math.isnan(x) or math.isnan(y):
            counts["dropped"] += 1
            continue
        for arm, rel in (("off", ra), ("on", rb)):
            if math.isnan(selection_tau(rel)):
                counts[("all_gold_" if any(rel) else "no_gold_") + arm] += 1
        t_off.append(x)
        t_on.append(y)
    return np.array(t_on), np.array(t_off), counts


def hypothesis_option(hypothesis: str, options: Sequence[str]) -> int | None:
    """The option a hypothesis names: the one with the highest token F1; None when none overlaps or two tie."""
    scores = [token_f1(hypothesis, o) for o in options]
    best = max(scores, default=0.0)
    if best <= 0.0 or scores.count(best) > 1:
        return None
    return scores.index(best)


def top_coverage_hypothesis(res: RetResult) -> str | None:
    """GATE-4: the hypothesis whose fingerprints one selected document covers best; None when RET did not run or
    two or more hypotheses tie for the top (a tie credits no hypothesis, not the first generated)."""
    if res.skip_reason or not res.hypotheses:
        return None
    cov = [max((fingerprint_coverage(d.text, res.fingerprints.get(h.hypothesis, [])) for d in res.docs), default=0.0)
           for h in res.hypotheses]
    best = max(cov)
    return None if cov.count(best) > 1 else res.hypotheses[cov.index(best)].hypothesis


def hypothesis_alignment(res: RetResult, options: Sequence[str], gold: int) -> bool:
    """GATE-4 for one question: the top-coverage hypothesis names the gold option (a tie for the top: unmatched)."""
    top = top_coverage_hypothesis(res)
    return top is not None and hypothesis_option(top, options) == gold


def added_cost_ratio(off: Sequence[ArmRun], on: Sequence[ArmRun]) -> GateFigure:
    """GATE-5: (cost of the RET runs - cost of the baseline runs) / cost of the baseline runs, in USD;
    nan when a call was unpriced or the baseline cost nothing."""
    pairs = _pairs(off, on)
    unpriced = sum(r.cost_usd is None for p in pairs for r in p)
    base = sum(a.cost_usd or 0.0 for a, _ in pairs)
    added = sum(b.cost_usd or 0.0 for _, b in pairs) - base
    value = added / base if base > 0 and not unpriced else float("nan")
    return GateFigure(value, len(pairs), {"baseline_cost_usd": base, "added_cost_usd": added,
                                          "unpriced_runs": unpriced, "fallback_rate": fallback_rate(off, on),
                                          "added_tokens": sum(b.tokens - a.tokens for a, b in pairs),
                                          "baseline_tokens": sum(a.tokens for a, _ in pairs)})


def added_latency(off: Sequence[ArmRun], on: Sequence[ArmRun]) -> GateFigure:
    """GATE-6: median over questions of (RET wall time - baseline wall time), in seconds."""
    added = [b.seconds - a.seconds for a, b in _pairs(off, on)]
    return GateFigure(statistics.median(added) if added else float("nan"), len(added),
                      {"median_off_s": statistics.median([a.seconds for a in off]) if off else float("nan"),
                       "median_on_s": statistics.median([b.seconds for b in on]) if on else float("nan"),
                       "fallback_rate": fallback_rate(off, on)})
