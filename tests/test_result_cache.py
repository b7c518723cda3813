"""Model-independent results cached by the content of their inputs."""
from __future__ import annotations

import pytest

from harness.result_cache import cache_key, cached

pytestmark = pytest.mark.unit


def test_computed_once_then_read_back_until_an_input_changes(tmp_path):
    data = tmp_path / "corpus.jsonl"
    data.write_text('{"_id": "d1"}\n')
    calls = []

    def compute():
        calls.append(1)
        return {"ndcg10": 0.5, "n": len(calls)}

    key = cache_key(files=[data], embedder="int8")
    v1, hit1 = cached(tmp_path / "c", "cmp", key, compute)
    v2, hit2 = cached(tmp_path / "c", "cmp", cache_key(files=[data], embedder="int8"), compute)
    assert hit1 is None and v1 == v2 == {"ndcg10": 0.5, "n": 1} and hit2["cached_from"] and len(calls) == 1
    assert cache_key(files=[data], embedder="float") != key  # another setting
    from harness import provenance

    data.write_text('{"_id": "d2"}\n')
    provenance._HASHES.clear()  # a new process would see the new content
    v3, hit3 = cached(tmp_path / "c", "cmp", cache_key(files=[data], embedder="int8"), compute)
    assert hit3 is None and v3["n"] == 2


def test_a_torn_file_is_recomputed(tmp_path):
    key = cache_key(x=1)
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / f"r-{key[:16]}.json").write_text('{"key": "')
    value, hit = cached(tmp_path, "r", key, lambda: 7)
    assert value == 7 and hit is None


def test_a_negative_control_is_never_answered_from_the_cache(tmp_path, monkeypatch):
    from harness.plugin.controls import ENV

    key = cache_key(x=2)
    cached(tmp_path, "r", key, lambda: "real")
    monkeypatch.setenv(ENV, "some-control")
    assert cached(tmp_path, "r", key, lambda: "broken") == ("broken", None)
