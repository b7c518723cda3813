"""Model capability, shown at the top of the report: the chosen model's zero-shot accuracy on a fixed, seeded
MMLU sample (200 questions, chance 0.25) with its Wilson 95% interval."""
from __future__ import annotations

import pytest

from harness.capability import measure_capability, sample_mcq
from harness.data.qa import mcq_card
from harness.llm.local import LOCAL_MODELS

pytestmark = pytest.mark.benchmark
SAMPLE = 200


def test_model_capability_on_mmlu(rag_llm, rag_config, rag_mcq_set, rag_measure):
    ds = rag_mcq_set("capability")  # harness.datasets.capability, default mmlu
    items = sample_mcq(ds.items, SAMPLE, seed=rag_config.harness.seed)
    alias = rag_llm.label.split("/", 1)[1] if rag_llm.label.startswith("local/") else None
    variant = "completion" if alias in LOCAL_MODELS and not LOCAL_MODELS[alias].instruct else "chat"
    cap = measure_capability(rag_llm, items, dataset=ds.name, seed=rag_config.harness.seed, variant=variant)
    rag_measure("model_capability", cap.accuracy, model=cap.model, dataset=ds.name, n=cap.n, ci=list(cap.ci),
            chance=cap.chance, unparsed=cap.unparsed, errors=cap.errors, seed=cap.seed, prompt_variant=variant,
            card=mcq_card(ds), sample=f"{SAMPLE} questions, seeded")
    assert cap.errors < cap.n, "every call failed: no capability measured"
