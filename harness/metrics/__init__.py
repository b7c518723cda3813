"""Retrieval and answer metrics: pure functions over plain mappings and arrays."""
from harness.metrics._ranking import average_precision, hit_rate, mrr, ndcg, order_run, precision, recall
from harness.metrics._registry import Measure, evaluate, mean_scores, parse_measure
from harness.metrics._text import (
    answer_match,
    content_words,
    edit_distance,
    exact_match,
    jaccard,
    mean_pairwise_jaccard,
    normalize_answer,
    token_count,
    token_f1,
)

__all__ = [
    "Measure", "answer_match", "content_words", "average_precision", "edit_distance", "evaluate", "exact_match", "hit_rate", "jaccard",
    "mean_pairwise_jaccard", "mean_scores", "mrr", "ndcg", "normalize_answer", "order_run", "parse_measure",
    "precision", "recall", "token_count", "token_f1",
]
