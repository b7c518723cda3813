"""Records the default judge's real rulings on HaluEval items for the per-side calibration of κ decided in looks
(`benchmarks/test_side_calibration.py`, CALIB-SIDES-KAPPA-*): the first ruling (the one κ reads) of the run's judge
on `ITEMS` seeded items (half right, half hallucinated answers), a failed ruling kept as null. Not collected by
default (no test_ prefix): `pytest -m benchmark benchmarks/record_judge_rulings.py -p no:randomly` writes
`fixtures/calibration/judge_rulings.json`, one entry per judge model."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.benchmark
ITEMS, SEED = 400, 36
OUT = Path(__file__).resolve().parents[1] / "fixtures" / "calibration" / "judge_rulings.json"


def test_record_judge_rulings(rag_judges, rag_qa_set, rag_config):
    from harness.judge.labelled import halueval_items
    from harness.parallel import ordered_map

    qa = rag_qa_set("judge")
    items = halueval_items(qa, ITEMS, seed=SEED)
    data = json.loads(OUT.read_text()) if OUT.exists() else {"judges": {}}
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    for judge in rag_judges:
        rulings = ordered_map(lambda it, j=judge: j.rule(it.item, seed=rag_config.harness.judge.seed), items,
                              getattr(judge.llm, "concurrency", 1))
        data["judges"][judge.name] = {
            "dataset": qa.name, "items": ITEMS, "seed": SEED, "commit": commit,
            "temperature": judge.temperature, "answer_ids": [i.answer_id for i in items],
            "labels": [i.supported for i in items], "verdicts": [r.verdict for r in rulings]}
    data["source"] = ("the first ruling of each judge (harness.judge.LLMJudge.rule, the run's seed) on seeded "
                      "HaluEval items (harness.judge.labelled.halueval_items), recorded by "
                      "benchmarks/record_judge_rulings.py; null: a failed ruling")
    OUT.write_text(json.dumps(data, indent=1) + "\n")
