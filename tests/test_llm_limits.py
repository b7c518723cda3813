"""Client-wide limits: the adaptive concurrency limit (429s halve it once per burst and pause every thread until
Retry-After; success raises it back slowly), the rate windows, and the client against the simulated API."""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from harness.llm.clock import VirtualClock
from harness.llm.limits import AdaptiveLimit, RateWindow



@pytest.mark.unit
def test_a_burst_of_429s_halves_once_and_success_recovers_slowly():
    clock = VirtualClock()
    lim = AdaptiveLimit(8, burst_s=1.0, clock=clock)
    for _ in range(5):  # five threads see a 429 in the same burst
        lim.rate_limited(2.0)
    assert (lim.limit, lim.decreases, lim.paused_until) == (4, 1, 2.0)
    clock.t = 1.5
    lim.rate_limited(None)  # a later burst halves again
    assert lim.limit == 2
    for _ in range(2):
        lim.succeeded()
    assert lim.limit == 3  # +1 after `limit` successes in a row
    for _ in range(3):
        lim.succeeded()
    assert lim.limit == 4
    for _ in range(100):
        lim.succeeded()
    assert lim.limit == 8  # never above the maximum


@pytest.mark.unit
def test_at_most_limit_calls_in_flight():
    lim = AdaptiveLimit(3)
    peak, now, lock = [0], [0], threading.Lock()

    def work(_):
        lim.acquire()
        try:
            with lock:
                now[0] += 1
                peak[0] = max(peak[0], now[0])
            threading.Event().wait(0.01)
            with lock:
                now[0] -= 1
        finally:
            lim.release()

    with ThreadPoolExecutor(12) as pool:
        list(pool.map(work, range(60)))
    assert peak[0] == 3


@pytest.mark.unit
def test_rate_window_waits_for_the_oldest_to_leave_the_window():
    clock = VirtualClock()
    win = RateWindow(3, window_s=60.0, clock=clock)
    for _ in range(3):
        win.take()
    assert clock.t == 0.0
    win.take()  # the 4th request waits until the first is 60 s old
    assert clock.t == pytest.approx(60.0)
    win.add(2)
    win.take()  # the window now holds 1 + 2 units: the next waits until t=120
    assert clock.t == pytest.approx(120.0)
    slot = win.take()
    clock.t = 130.0
    win.settle(slot)  # a call that returned at 130 counts from 130, not from when it left
    assert slot[0] == 130.0


@pytest.mark.integration
@pytest.mark.block_network(allowed_hosts=[r"127\.0\.0\.1$"])  # its API is on loopback
def test_client_honours_retry_after_and_loses_nothing_against_the_simulated_api():
    from harness.llm.client import LLMClient
    from harness.llm.simulated import SimulatedAPI

    with SimulatedAPI(lambda m, p: "ok " + m[-1]["content"], latency_s=0.01, rpm=10, window_s=1.0,
                      error_rate=0.1, seed=3) as api:
        llm = LLMClient("openai/sim", api_base=api.api_base, api_key="sk-sim", concurrency=8, backoff_s=0.05,
                        max_attempts=4)
        with ThreadPoolExecutor(8) as pool:
            out = list(pool.map(lambda i: llm.complete(f"q{i}", use_cache=False).text, range(30)))
    assert out == [f"ok q{i}" for i in range(30)]  # input order, nothing lost
    assert api.log.statuses[429] > 0 and llm.stats.rate_limited == api.log.statuses[429]
    assert llm.limit.decreases >= 1 and api.log.statuses[500] == llm.stats.retries


@pytest.mark.unit
def test_simulated_api_counts_the_peak_rate():
    from harness.llm.simulated import SimulatedLog

    log = SimulatedLog(served=[0.0, 10.0, 59.0, 61.0, 62.0, 130.0])
    assert log.peak_rate(60.0) == 4  # 10, 59, 61, 62
