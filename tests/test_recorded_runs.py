"""Recorded per-query runs (`harness.metrics.recorded`): read back bit for bit under the key they were recorded
with and under no other; the record the calibration benchmarks' statistics controls read is keyed to the shared data
as it is; and only a statistics control reads it."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from harness.metrics.recorded import read_recorded, runs_key, write_recorded
from harness.plugin.controls import CONTROLS, ENV, family_of, statistics_control_in_force

pytestmark = pytest.mark.unit
RECORD = Path(__file__).resolve().parents[1] / "fixtures" / "calibration" / "retrieval_runs.json"


def test_a_record_reads_back_bit_for_bit_under_its_key_only(tmp_path):
    path = tmp_path / "sub" / "runs.json"
    rng = np.random.default_rng(7)
    scores = {"dense:nDCG@10": rng.random(50) / 3, "bm25:Recall@10": (rng.random(50) < 0.5) * 1.0}
    key = runs_key("cranfield", "abc", "emb", sample=30, seed=36)
    assert key == {"dataset": "cranfield", "content_hash": "abc", "embedder": "emb",
                   "queries": {"sample": 30, "seed": 36}, "k": 10}
    assert runs_key("cranfield", "abc", "emb")["queries"] == {"all": True}
    assert read_recorded(path, key) is None  # no file yet
    write_recorded(path, key, scores, source="a test")
    got = read_recorded(path, key)
    assert got is not None and sorted(got) == sorted(scores)
    assert all(np.array_equal(got[m], scores[m]) for m in scores)  # exactly, not approximately
    for other in (runs_key("cranfield", "abd", "emb", sample=30, seed=36), runs_key("cranfield", "abc", "emb2",
                  sample=30, seed=36), runs_key("cranfield", "abc", "emb", sample=30, seed=37),
                  runs_key("cranfield", "abc", "emb"), runs_key("cranfield", "abc", "emb", sample=30, seed=36, k=5),
                  runs_key("halueval-qa", "abc", "emb", sample=30, seed=36)):
        assert read_recorded(path, other) is None, other
    # a second set joins the first; recording a set again replaces it
    k2 = runs_key("halueval-qa", "def", "emb")
    write_recorded(path, k2, {"dense:nDCG@10": np.array([0.25, 1.0])}, source="a test")
    write_recorded(path, key, {"dense:nDCG@10": np.array([0.5])}, source="again")
    doc = json.loads(path.read_text())
    assert doc["source"] == "again" and sorted(doc["sets"]) == ["cranfield", "halueval-qa"]
    assert list(read_recorded(path, key)) == ["dense:nDCG@10"] and read_recorded(path, key)["dense:nDCG@10"][0] == 0.5
    assert np.array_equal(read_recorded(path, k2)["dense:nDCG@10"], [0.25, 1.0])
    assert path.stat().st_mode & 0o044 == 0o044  # readable by others, as any file in the repository
    assert not list(path.parent.glob(".*.tmp"))


def test_the_repositorys_record_is_keyed_to_the_data_as_it_is(rag_config):
    """The record the calibration specs' controls read matches the data directory's sets (else every control run
    would index and search them again), for the embedder and queries the benchmarks use (test_side_calibration.py's
    SETS and SEED)."""
    from harness.data.qa import content_hash

    data = rag_config.harness.data_dir
    if not (data / "cranfield" / "corpus.jsonl").is_file():
        pytest.skip(f"the Cranfield set is not in the data directory: {data / 'cranfield' / 'corpus.jsonl'}")
    for name, sample in {"cranfield": None, "halueval-qa": 3000}.items():
        key = runs_key(name, content_hash(data / name), "all-MiniLM-L6-v2-onnx-int8", sample=sample,
                       seed=36 if sample else None)
        runs = read_recorded(RECORD, key)
        assert runs is not None, f"{RECORD} has no {name} runs for {key}"
        assert sorted(runs) == [f"{m}:{x}" for m in ("bm25", "dense", "hybrid") for x in ("Recall@10", "nDCG@10")]
        assert {len(v) for v in runs.values()} == {sample or 225}
        assert all(((v >= 0) & (v <= 1)).all() for v in runs.values())


def test_only_a_statistics_control_reads_the_record(monkeypatch):
    assert family_of("relative-delta-method") == "stats" and family_of("embedding-cache-off") == "retrieval"
    stats = sorted(n for n in CONTROLS if family_of(n) == "stats")
    assert {"calibrated-tests-liberal", "sequential-naive-interval", "futility-stops-everything"} <= set(stats)
    monkeypatch.delenv(ENV, raising=False)
    assert not statistics_control_in_force()
    for name, expected in (("relative-delta-method", True), ("embedding-cache-off", False),
                           ("no-such-control", False)):
        monkeypatch.setenv(ENV, name)
        assert statistics_control_in_force() is expected, name
