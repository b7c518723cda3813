"""harness.parallel: ordered_map keeps input order under concurrency; LazyMap runs only what is drawn."""
from __future__ import annotations

import threading
import time

import pytest

from harness.parallel import LazyMap, ordered_map

pytestmark = pytest.mark.unit


def test_ordered_map_keeps_order_and_bounds_concurrency():
    running, peak, lock = [0], [0], threading.Lock()

    def fn(x):
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        time.sleep(0.01 * (5 - x % 5))  # later items finish first
        with lock:
            running[0] -= 1
        return x * x

    assert ordered_map(fn, range(12), 3) == [x * x for x in range(12)]
    assert peak[0] == 3


def test_lazy_map_runs_only_the_items_drawn_and_shares_them():
    calls = []
    lazy = LazyMap(lambda x: calls.append(x) or x + 100, range(30), 2)
    assert lazy.available == 30 and lazy.drawn == 0
    assert lazy.upto(10) == list(range(100, 110))
    assert calls == list(range(10))
    assert lazy.upto(5) == list(range(100, 105))  # an earlier look: nothing new runs
    assert lazy.upto(20)[-1] == 119 and sorted(calls) == list(range(20))
    assert lazy.upto(99) == list(range(100, 130)) and lazy.drawn == 30 and len(calls) == 30


def test_lazy_map_raises_a_tasks_error_and_keeps_what_it_had():
    def fn(x):
        if x == 12:
            raise RuntimeError("model call failed")
        return x

    lazy = LazyMap(fn, range(20), 1)
    assert lazy.upto(10) == list(range(10))
    with pytest.raises(RuntimeError, match="model call failed"):
        lazy.upto(20)
    assert lazy.drawn == 10


def test_lazy_map_estimates_the_rest_at_the_pace_of_what_it_drew():
    import time

    lazy = LazyMap(lambda x: time.sleep(0.01) or x, range(30), 1)
    assert lazy.seconds_to(10) is None  # nothing drawn: nothing to estimate from
    lazy.upto(10)
    assert lazy.seconds >= 0.1
    assert lazy.seconds_to(25) == pytest.approx(lazy.seconds / 10 * 15)
    assert lazy.seconds_to(10) == 0.0 and lazy.seconds_to(99) == pytest.approx(lazy.seconds / 10 * 20)


def test_lazy_map_paces_replayed_results_at_the_seconds_they_took_when_measured():
    lazy = LazyMap(lambda x: {"x": x, "seconds": 2.0}, range(30), 1, seconds_of=lambda r: r["seconds"])
    lazy.upto(10)  # instant now (a replay), 2 s each when measured
    assert lazy.seconds == pytest.approx(20.0, abs=0.05)
    assert lazy.seconds_to(30) == pytest.approx(40.0, abs=0.1)
    side_by_side = LazyMap(lambda x: {"seconds": 2.0}, range(30), 4, seconds_of=lambda r: r["seconds"])
    side_by_side.upto(8)  # measured 4 at a time: 8 questions of 2 s took 4 s
    assert side_by_side.seconds == pytest.approx(4.0, abs=0.05)


def test_seconds_for_is_the_pace_of_what_was_done_times_what_is_left():
    from harness.parallel import seconds_for

    assert seconds_for(12.0, 4, 6) == 18.0  # 3 s each, by hand
    assert seconds_for(12.0, 4, 0) == 0.0 and seconds_for(12.0, 4, -2) == 0.0  # nothing left to do
    assert seconds_for(0.0, 0, 5) is None  # nothing done: no pace
    assert seconds_for(0.0, 0, 0) == 0.0  # nothing to do needs no pace
