"""Negative controls for metrics and detectors: nDCG's discount and the abstention, premise and reasoning detectors."""
from __future__ import annotations

from typing import Any

import numpy as np

from harness.plugin.controls.registry import control, replace_everywhere


@control("ndcg-off-by-one-rank", breaks="nDCG discounts the hit at rank r by log2(r) + 1 instead of log2(r + 1)")
def _ndcg_off(mp: Any) -> None:
    from harness.metrics import _ranking as ranking

    def _ndcg(m, k):
        disc = 1.0 / (np.log2(np.arange(1, k + 1, dtype=np.float64)) + 1.0)
        return ranking._safe_div(m.gains[:, :k] @ disc, m.ideal[:, :k] @ disc)

    mp.setitem(ranking.MATRIX_METRICS, "ndcg", _ndcg)


@control("abstention-never-detected", breaks="no answer is read as an abstention")
def _no_abstain(mp: Any) -> None:
    from harness.techniques.e2e4 import evaluation as e2e4_eval

    replace_everywhere(mp, e2e4_eval.abstains, lambda answer: False)


@control("abstention-detector-loose", breaks="the abstention detector before issue 31: any 'unknown' or "
                                             "'insufficient' anywhere in an answer reads as an abstention")
def _loose_abstain(mp: Any) -> None:
    from harness.metrics import detectors, qa

    replace_everywhere(mp, qa.is_abstention, detectors.loose_abstention)


@control("premise-detector-loose", breaks="the premise detector before issue 31: any negation ('is not', 'never') "
                                          "reads as rejecting the question's premise")
def _loose_premise(mp: Any) -> None:
    from harness.metrics import detectors, qa

    replace_everywhere(mp, qa.rejects_premise, detectors.loose_rejects_premise)


@control("reasoning-detector-counts-echo", breaks="any non-empty E4 reasoning counts, an echoed prompt included")
def _loose_reasoning(mp: Any) -> None:
    from harness.metrics import detectors
    from harness.metrics import reasoning as e2e4_reasoning

    replace_everywhere(mp, e2e4_reasoning.has_reasoning, detectors.loose_has_reasoning)


@control("specificity-counts-question-words", breaks="E4 reasoning reads as specific when it shares two words with "
                                                     "the question or names a page, an echoed prompt included")
def _loose_specific(mp: Any) -> None:
    from harness.metrics import detectors
    from harness.metrics import reasoning as e2e4_reasoning

    replace_everywhere(mp, e2e4_reasoning.specific_reasoning, detectors.loose_specific_reasoning)
