"""Answer-level RAG metrics over claim verdicts, pure functions of plain values.

- `faithfulness(verdicts)`: the answer's claims judged supported by the retrieved context, over its claims:
  Ragas' Faithfulness (Es et al., "RAGAS: Automated Evaluation of Retrieval Augmented Generation", EACL 2024
  demo, §3: |V| / |S|, S the statements extracted from the answer, V those the context supports). An answer with
  no claim (an abstention, an empty answer) has no faithfulness: nan, never 1 or 0.
- `hallucination_rate(verdicts)`: unsupported claims over claims, 1 - faithfulness: DeepEval's
  HallucinationMetric reads the same ratio over contexts; here it is per claim, as RAGTruth (Niu et al., ACL
  2024) annotates hallucinated spans of an answer against its retrieved context.
- `answered_rate(abstained)`: on negative (unanswerable) queries, the share answered instead of abstained:
  every answer to such a query is a hallucination of an answer (SimpleQA's "attempted", Wei et al., 2024).
- `context_precision(ranked_ids, relevant)`: Ragas' ID-based context precision: the mean of precision@k over
  the ranks k that hold a relevant context, Σ_k precision@k · rel_k / (relevant contexts in the top K); 0 when
  none is relevant (average precision truncated at the retrieved list, normalised by what was retrieved).
- `context_recall(ranked_ids, relevant)`: Ragas' ID-based context recall: |retrieved ∩ relevant| / |relevant|;
  nan without a relevant id (no gold to recall).
- `answer_relevancy(verdicts)`: the share of judgements saying the answer addresses the question (TruLens'
  answer relevance of the RAG triad, asked as a yes/no question per answer; Ragas instead compares questions
  generated back from the answer with the question by embedding similarity).
"""
from __future__ import annotations

import math
from typing import Collection, Sequence

__all__ = ["answer_relevancy", "answered_rate", "context_precision", "context_recall", "faithfulness",
           "hallucination_rate"]


def faithfulness(verdicts: Sequence[bool]) -> float:
    """Supported claims / claims; nan for an answer with no claim."""
    return sum(bool(v) for v in verdicts) / len(verdicts) if len(verdicts) else math.nan


def hallucination_rate(verdicts: Sequence[bool]) -> float:
    """Unsupported claims / claims; nan for an answer with no claim."""
    return 1.0 - faithfulness(verdicts) if len(verdicts) else math.nan


def answered_rate(abstained: Sequence[bool]) -> float:
    """On negative queries: the share answered (not abstained); nan without queries."""
    return sum(not a for a in abstained) / len(abstained) if len(abstained) else math.nan


def context_precision(ranked_ids: Sequence[str], relevant: Collection[str]) -> float:
    """Mean precision@k over the ranks holding a relevant context (Ragas' ID-based context precision)."""
    hits, total = 0, 0.0
    for k, doc in enumerate(ranked_ids, start=1):
        if doc in relevant:
            hits += 1
            total += hits / k
    return total / hits if hits else 0.0


def context_recall(ranked_ids: Sequence[str], relevant: Collection[str]) -> float:
    """|retrieved ∩ relevant| / |relevant|; nan when nothing is relevant."""
    rel = set(relevant)
    return len(rel & set(ranked_ids)) / len(rel) if rel else math.nan


def answer_relevancy(verdicts: Sequence[bool]) -> float:
    """The share of relevance judgements that say the answer addresses the question; nan without any."""
    return sum(bool(v) for v in verdicts) / len(verdicts) if len(verdicts) else math.nan
