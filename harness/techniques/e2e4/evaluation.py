"""Study metrics over E2/E3/E4 result rows: per query type answer EM/F1/match, context recall,
abstention on negative queries, citation presence, and paired E3-vs-E2 / E4-vs-E3 significance."""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from harness.metrics.qa import is_abstention
from harness.metrics._text import answer_match, exact_match, token_f1
from harness.stats import mcnemar, paired_difference
from harness.stats._effect import paired_effect

_CITE = re.compile(r"\[\s*source\s*\d+|\bsource\s*\d+\b|\b[\w-]+\.md\b", re.IGNORECASE)


abstains = is_abstention  # one abstention detector for every claim (harness.metrics.qa.ABSTENTION_PATTERNS)


def handles_out_of_kb(answer: str, *, false_premise: bool = False, question: str = "") -> bool:
    """The right response to a question the KB cannot answer: an abstention, or for a false-premise question
    (FreshQA) a rejection of the premise (`harness.metrics.qa.rejects_premise`, which reads the question too)."""
    from harness.metrics import qa

    return abstains(answer) or (false_premise and qa.rejects_premise(answer, question))


def cites(answer: str) -> bool:
    return bool(_CITE.search(answer))


def context_recall(row: dict[str, Any]) -> float:
    refs = set(row.get("context_reference") or [])
    if not refs:
        return float("nan")
    got = {c["metadata"].get("filename") for c in row["retrieved_chunks"]}
    return len(refs & got) / len(refs)


def correct(row: dict[str, Any]) -> bool:
    """Answerable: every part of the ground truth ('a; b') occurs in the answer; negative: it abstains."""
    qtype = row["metadata"].get("query_type")
    if qtype == "negative":
        return abstains(row["llm_answer"])
    parts = [p.strip() for p in row["ground_truth"].split(";") if p.strip()]
    return all(answer_match(row["llm_answer"], p) for p in parts)


def all_queries_figure(selected: int, total: int, count: int) -> tuple[float, dict[str, str | int]]:
    """A "processes all `total` queries" figure from a run over `selected` of them, `count` of which were
    processed: the count itself when the run took all; when it took fewer, a failure among them already refutes
    the claim (the count is reported and falls short), and a clean subset cannot confirm it (nan, with the
    reason and the queries it needs, all `total`: inconclusive)."""
    if selected == total or count < selected:
        return count, {}
    return float("nan"), {"reason": f"the run took {selected} of the {total} queries (--max-queries {selected}) "
                                    f"and processed all {count}; --max-queries 0 runs all {total}",
                          "queries_needed": total, "needed_for": f"the claim is about all {total}"}


def load_rows(path: str | Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]


def summarize(rows: Iterable[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per query type (and 'all'): n, accuracy, em, f1, context_recall, abstention, citation."""
    by: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by.setdefault(r["metadata"].get("query_type", "?"), []).append(r)
        by.setdefault("all", []).append(r)
    out = {}
    for t, rs in sorted(by.items()):
        recall = [context_recall(r) for r in rs]
        recall = [x for x in recall if not np.isnan(x)]
        negs = [r for r in rs if r["metadata"].get("query_type") == "negative"]
        out[t] = {
            "n": len(rs),
            "accuracy": float(np.mean([correct(r) for r in rs])),
            "em": float(np.mean([exact_match(r["llm_answer"], r["ground_truth"]) for r in rs])),
            "f1": float(np.mean([token_f1(r["llm_answer"], r["ground_truth"]) for r in rs])),
            "context_recall": float(np.mean(recall)) if recall else float("nan"),
            "abstention_on_negative": float(np.mean([abstains(r["llm_answer"]) for r in negs])) if negs else float("nan"),
            "citation_rate": float(np.mean([cites(r["llm_answer"]) for r in rs])),
            "median_total_ms": float(np.median([r["total_time_ms"] for r in rs])),
        }
    return out


def compare(candidate: list[dict[str, Any]], baseline: list[dict[str, Any]], *,
            confidence: float = 0.95) -> dict[str, Any]:
    """Paired accuracy and context-recall differences over the queries both runs answered (the effects' intervals
    at `confidence`)."""
    b = {r["query_id"]: r for r in baseline}
    pairs = [(r, b[r["query_id"]]) for r in candidate if r["query_id"] in b]
    cand_ok = np.array([correct(c) for c, _ in pairs])
    base_ok = np.array([correct(x) for _, x in pairs])
    rec = [(context_recall(c), context_recall(x)) for c, x in pairs]
    rec = [(c, x) for c, x in rec if not (np.isnan(c) or np.isnan(x))]
    acc = paired_difference(cand_ok.astype(float), base_ok.astype(float), seed=1)
    rc = paired_difference([c for c, _ in rec], [x for _, x in rec], seed=1) if rec else None
    return {"n": len(pairs), "accuracy_delta": acc.mean, "accuracy_ci": list(acc.ci),
            "mcnemar_p": mcnemar(cand_ok, base_ok).p_value,
            "accuracy_effect": paired_effect(cand_ok.astype(float), base_ok.astype(float), binary=True, seed=1,
                                             confidence=confidence),
            "context_recall_delta": rc.mean if rc else float("nan"), "context_recall_ci": list(rc.ci) if rc else None,
            "context_recall_effect": paired_effect([c for c, _ in rec], [x for _, x in rec], seed=1,
                                                   confidence=confidence)}
