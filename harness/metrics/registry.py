"""Metrics as registered, declarative objects (one name, one metric), parsed from strings like `nDCG@10`."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable

import numpy as np

from harness.metrics.ranking import MATRIX_METRICS, Qrels, RunLike, relevance_matrix

_ALIASES = {"recall": "recall", "r": "recall", "p": "p", "precision": "p", "ndcg": "ndcg",
            "mrr": "mrr", "rr": "mrr", "map": "map", "ap": "map", "hit": "hit", "success": "hit"}
_PATTERN = re.compile(r"^\s*([A-Za-z]+)\s*@\s*(\d+)\s*$")


@dataclass(frozen=True)
class Measure:
    """A ranking measure with its cutoff, e.g. Measure('ndcg', 10) printed as `nDCG@10`."""

    name: str
    k: int

    def __str__(self) -> str:
        pretty = {"ndcg": "nDCG", "recall": "Recall", "p": "P", "mrr": "MRR", "map": "MAP", "hit": "Hit"}
        return f"{pretty[self.name]}@{self.k}"

    def per_query(self, qrels: Qrels, run: RunLike) -> np.ndarray:
        return MATRIX_METRICS[self.name](relevance_matrix(qrels, run, self.k), self.k)


def parse_measure(text: str) -> Measure:
    """`'nDCG@10'` -> Measure('ndcg', 10); unknown names or missing cutoffs raise ValueError."""
    m = _PATTERN.match(text)
    if not m or m.group(1).lower() not in _ALIASES:
        raise ValueError(f"unknown measure {text!r}; expected NAME@K with NAME in {sorted(set(_ALIASES))}")
    k = int(m.group(2))
    if k < 1:
        raise ValueError(f"measure {text!r}: cutoff must be >= 1")
    return Measure(_ALIASES[m.group(1).lower()], k)


def evaluate(qrels: Qrels, run: RunLike, measures: Iterable[str | Measure]) -> dict[str, np.ndarray]:
    """Per-query values for several measures, building the relevance matrix once at the deepest cutoff."""
    ms = [parse_measure(m) if isinstance(m, str) else m for m in measures]
    if not ms:
        return {}
    mat = relevance_matrix(qrels, run, max(m.k for m in ms))
    return {str(m): MATRIX_METRICS[m.name](mat, m.k) for m in ms}


def mean_scores(qrels: Qrels, run: RunLike, measures: Iterable[str | Measure]) -> dict[str, float]:
    return {name: float(v.mean()) if len(v) else 0.0 for name, v in evaluate(qrels, run, measures).items()}
