"""The clocks the LLM client's limits and the simulated API run on (harness.llm.clock): a scaled clock agrees
across processes, a rate window on it admits exactly its limit per simulated window, and Retry-After pauses,
rate-window waits and retry backoff are waited on the client's clock, not the wall's. No test asserts wall time:
scaled readings are bounded from below (a sleep never returns early; the one thing assumed is that five takes in
a row fit in a 1 s window), virtual ones are exact."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.llm.clock import ScaledClock, VirtualClock, VirtualClockOverrun
from harness.llm.limits import AdaptiveLimit, RateWindow
from harness.llm.simulated import SimulatedAPI, SimulatedLog

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.integration
def test_a_scaled_clock_reads_the_same_simulated_time_in_another_process():
    clock = ScaledClock(1000)
    read = "from harness.llm.clock import ScaledClock; print(repr(ScaledClock(1000).monotonic()))"
    child = [sys.executable, "-c", read]
    before = clock.monotonic()
    out = subprocess.run(child, capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}).stdout
    after = clock.monotonic()
    assert before <= float(out) <= after  # one time line for the simulated server and its client subprocess
    t0 = clock.monotonic()
    clock.sleep(50.0)  # 50 simulated seconds: 50 ms of real time
    assert clock.monotonic() - t0 >= 50.0


@pytest.mark.unit
def test_a_rate_window_on_a_scaled_clock_admits_exactly_the_limit_per_simulated_window():
    clock = ScaledClock(60)  # a 60 s window lasts 1 s: five takes in a row (microseconds) fit in one
    win = RateWindow(5, window_s=60.0, clock=clock)
    times = []
    for _ in range(15):
        slot = win.take()
        times.append(slot[0])
        win.settle(slot)
    assert SimulatedLog().peak_rate(60.0, times) == 5  # never more than the limit, and the limit is reached
    assert times[5] - times[0] >= 60.0 and times[10] - times[5] >= 60.0  # the 6th and 11th wait a whole window


@pytest.mark.unit
def test_a_rate_window_waits_on_its_own_clock():
    clock = VirtualClock()
    win = RateWindow(2, window_s=60.0, clock=clock)
    for _ in range(5):
        win.take()
    assert clock.slept == [60.0, 60.0] and clock.t == 120.0  # the 3rd and 5th requests each wait one window


@pytest.mark.unit
def test_retry_after_pauses_every_call_for_that_long_on_the_clock():
    virtual = VirtualClock()
    lim = AdaptiveLimit(4, clock=virtual)
    lim.rate_limited(30.0)
    lim.acquire()
    assert virtual.slept == [30.0] and virtual.t == 30.0
    scaled = ScaledClock(1000)  # 30 simulated seconds: 30 ms of real time
    lim = AdaptiveLimit(4, clock=scaled)
    t0 = scaled.monotonic()
    lim.rate_limited(30.0)
    lim.acquire()
    assert scaled.monotonic() - t0 >= 30.0


@pytest.mark.unit
def test_a_virtual_clock_fails_a_loop_that_never_sees_it_advance():
    clock = VirtualClock(horizon=100.0)
    with pytest.raises(VirtualClockOverrun):
        while True:  # waits on the virtual clock for a condition read off another one
            clock.sleep(60.0)


def _client(api: SimulatedAPI, clock, **kw):
    from harness.llm.client import LLMClient

    return LLMClient("openai/sim", api_base=api.api_base, api_key="sk-sim", concurrency=1, clock=clock, **kw)


@pytest.mark.integration
@pytest.mark.block_network(allowed_hosts=[r"127\.0\.0\.1$"])  # its API is on loopback
def test_the_client_waits_backoff_and_rate_windows_on_its_clock():
    from harness.llm.client import LLMError

    clock = VirtualClock()
    with SimulatedAPI(lambda m, p: "ok", latency_s=0.0, error_rate=1.0) as api:
        with pytest.raises(LLMError):
            _client(api, clock, max_attempts=3, backoff_s=1.0).complete("q", use_cache=False)
    assert clock.slept == [1.0, 2.0]  # the 1, 2 s backoff after two 500s, none after the last attempt
    clock = VirtualClock()
    with SimulatedAPI(lambda m, p: "ok", latency_s=0.0) as api:
        llm = _client(api, clock, requests_per_minute=2)
        assert [llm.complete(f"q{i}", use_cache=False).text for i in range(5)] == ["ok"] * 5
    assert clock.slept == [60.0, 60.0]  # the 3rd and 5th calls each wait for the client's 60 s window


@pytest.mark.integration
@pytest.mark.block_network(allowed_hosts=[r"127\.0\.0\.1$"])  # its API is on loopback
def test_retry_after_from_a_server_on_the_same_scaled_clock_is_waited_in_simulated_seconds():
    from harness.llm.client import LLMError

    clock = ScaledClock(600)  # 30 simulated seconds: 50 ms of real time
    # a window longer than the test: the 3rd request and every retry of it get a 429 with Retry-After: 30
    with SimulatedAPI(lambda m, p: "ok", latency_s=0.0, rpm=2, window_s=1e9, retry_after_s=30.0, clock=clock) as api:
        llm = _client(api, clock, max_attempts=1, max_rate_limit_retries=2)
        assert [llm.complete(f"q{i}", use_cache=False).text for i in range(2)] == ["ok", "ok"]
        with pytest.raises(LLMError):
            llm.complete("q2", use_cache=False)
        log = api.log
    assert dict(log.statuses) == {200: 2, 429: 3} and llm.stats.rate_limited == 3
    a = log.arrivals
    assert a[3] - a[2] >= 30.0 and a[4] - a[3] >= 30.0  # each retry left at least Retry-After after the 429
