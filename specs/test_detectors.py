"""DETECT-*: the answer detectors behind the E2-E4 claims, measured against real model answers labelled by hand
(fixtures/detectors/labelled_answers.jsonl, issue 31). Each check reads the detector's min(precision, recall);
the detector as it was before issue 31 is measured beside it and reported as context (`loose`)."""
from __future__ import annotations

from collections import Counter

import pytest

from harness.metrics.detectors import load_detector_set, measure

pytestmark = pytest.mark.unit

ITEMS = load_detector_set()
SPECS = {"DETECT-ABSTAIN-HAND": "abstains", "DETECT-PREMISE-HAND": "rejects_premise",
         "DETECT-REASONING-HAND": "has_reasoning", "DETECT-SPECIFIC-HAND": "specific_reasoning"}


@pytest.mark.spec(*SPECS)
def test_detector_against_hand_labels(rag_spec, rag_check):
    name = SPECS[rag_spec.id]
    labelled = [it for it in ITEMS if it.labels[name] is not None]
    score, loose = measure(name, ITEMS), measure(name, ITEMS, loose=True)
    rag_check(rag_spec.id, score.worst, detector=name, **score.as_context(), positives=sum(bool(it.labels[name])
                                                                                      for it in labelled),
          loose=loose.as_context(), sources=dict(Counter(it.source for it in labelled)),
          dataset="fixtures/detectors/labelled_answers.jsonl")
