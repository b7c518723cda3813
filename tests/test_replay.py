"""`harness.replay`: a measurement drawn from the model is kept for the next run on the same code, configuration
and model, replayed with its calls counted as cache hits, and drawn afresh when anything in its key changes, when
its file is torn, under a negative control, or with replay off."""
from __future__ import annotations

import pytest

from harness.control_env import ENV
from harness.llm.meter import METER
from harness.replay import Replay, code_hash

pytestmark = pytest.mark.unit


def _draw(log: list[str], calls: int = 3, value: object = None):
    def compute():
        log.append("drawn")
        for _ in range(calls):
            METER.call(10, 2)  # what the measurement asked of the model
        return value if value is not None else {"seconds": [0.5, 0.7], "ids": ["d1", "d2"]}
    return compute


def test_a_second_run_replays_the_measurement_and_counts_its_calls_as_cache_hits(tmp_path):
    log: list[str] = []
    first = Replay(tmp_path, {"config": {"seed": 1}})
    value, when = first("ragf-006", _draw(log), model="m", dataset="d")
    assert (value, when, log) == ({"seconds": [0.5, 0.7], "ids": ["d1", "d2"]}, None, ["drawn"])
    second = Replay(tmp_path, {"config": {"seed": 1}})  # the next run
    hits = METER.snapshot()["cache_hits"]
    calls = METER.snapshot()["llm_calls"]
    again, when = second("ragf-006", _draw(log), model="m", dataset="d")
    assert again == value and log == ["drawn"] and when is not None
    assert METER.snapshot()["cache_hits"] - hits == 3 and METER.snapshot()["llm_calls"] == calls
    assert [(r["name"], r["calls"]) for r in second.replayed] == [("ragf-006", 3)]


@pytest.mark.parametrize("change", ["model", "config", "name"])
def test_anything_in_the_key_changed_draws_afresh(tmp_path, change):
    log: list[str] = []
    Replay(tmp_path, {"config": {"seed": 1}})("wsop-006", _draw(log), model="m")
    replay = Replay(tmp_path, {"config": {"seed": 2 if change == "config" else 1}})
    replay("wsop-007" if change == "name" else "wsop-006", _draw(log), model="other" if change == "model" else "m")
    assert log == ["drawn", "drawn"] and replay.replayed == []


def test_off_torn_or_under_a_control_it_draws_afresh(tmp_path, monkeypatch):
    log: list[str] = []
    off = Replay(None)
    off("e2e4-study", _draw(log))
    off("e2e4-study", _draw(log))
    assert log == ["drawn", "drawn"]
    on = Replay(tmp_path)
    on("e2e4-study", _draw(log))
    (path,) = tmp_path.glob("e2e4-study-*.pkl")
    monkeypatch.setenv(ENV, "a-control")  # a control must reach the code it breaks
    on("e2e4-study", _draw(log))
    monkeypatch.delenv(ENV)
    path.write_bytes(path.read_bytes()[:10])  # killed mid-write by an older version: torn
    on("e2e4-study", _draw(log))
    assert log == ["drawn"] * 5 and on.replayed == []
    assert on("e2e4-study", _draw(log))[1] is not None  # rewritten whole: replayed now


def test_code_hash_reads_the_sources_not_their_compiled_caches(tmp_path):
    (tmp_path / "m.py").write_text("x = 1\n")
    before = code_hash(tmp_path)
    (tmp_path / "__pycache__").mkdir()
    (tmp_path / "__pycache__" / "m.cpython-312.pyc").write_bytes(b"\0compiled")
    from harness import provenance

    provenance._HASHES.clear()
    assert code_hash(tmp_path) == before
    (tmp_path / "m.py").write_text("x = 2\n")
    provenance._HASHES.clear()
    assert code_hash(tmp_path) != before


def test_a_value_that_cannot_be_kept_still_stands(tmp_path):
    log: list[str] = []
    replay = Replay(tmp_path)
    value, when = replay("closure", _draw(log, value=lambda: 1))  # a lambda cannot be pickled
    assert callable(value) and when is None and not list(tmp_path.glob("*.pkl"))
    replay("closure", _draw(log, value=lambda: 1))
    assert log == ["drawn", "drawn"]


def test_a_trace_is_kept_with_its_stages_and_events_not_its_lock():
    import pickle

    from harness.types import Trace

    trace = Trace()
    with trace.stage("retrieve"):
        trace.events.append({"name": "ret_skip"})
    back = pickle.loads(pickle.dumps(trace))
    assert back.events == trace.events and [s.name for s in back.stages] == ["retrieve"]
    with back.stage("again"):  # a working lock, its own
        pass
    assert len(back.stages) == 2 and len(trace.stages) == 1


def test_measurements_computed_side_by_side_each_keep_their_own_calls(tmp_path):
    """Items of a study ruled at once (harness.parallel, as the judge-agreement and RET studies rule theirs): each
    replay keeps the calls its own item made, not those of the items beside it; a later run replays as many."""
    import threading

    from harness.parallel import ordered_map

    started = threading.Barrier(4)  # all four items are being measured at the same time

    def item(calls: int):
        def compute():
            started.wait(timeout=10)
            for _ in range(calls):
                METER.call(5, 1)
            started.wait(timeout=10)  # no item ends before every item has made its calls
            return calls
        return compute

    replay = Replay(tmp_path)
    ordered_map(lambda c: replay("judge-item", item(c), item=c), [1, 2, 3, 4], 4)
    again = Replay(tmp_path)
    hits = METER.snapshot()["cache_hits"]
    assert [again("judge-item", item(c), item=c)[0] for c in [1, 2, 3, 4]] == [1, 2, 3, 4]
    assert [r["calls"] for r in again.replayed] == [1, 2, 3, 4]
    assert METER.snapshot()["cache_hits"] - hits == 10


def test_a_scope_counts_its_own_context_and_the_tasks_it_starts():
    from harness.parallel import ordered_map

    with METER.scope() as outer:
        METER.call(3, 1)
        with METER.scope() as inner:
            ordered_map(lambda _: METER.cache_hit(), range(3), 3)  # tasks started here count here
        METER.call(2, 0)
    assert inner == {"llm_calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "cache_hits": 3}
    assert outer == {"llm_calls": 2, "prompt_tokens": 5, "completion_tokens": 1, "cache_hits": 3}
