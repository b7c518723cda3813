"""A rate window carried across a resume (RateWindow.carry, LLMClient.carry_rate_windows, the E2-E4 runner): the
resumed run counts the requests the killed one sent, on a virtual clock (exact) and against the simulated API on
loopback on a scaled clock (no real minute waited). LIVE-RATE-LIMIT-RESUME measures it across a real kill -9."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.llm.clock import ScaledClock, VirtualClock
from harness.llm.limits import RATE_WINDOW_FILE, RateWindow
from harness.llm.simulated import SimulatedAPI, SimulatedLog



@pytest.mark.unit
def test_a_resumed_window_counts_the_killed_runs_requests(tmp_path: Path):
    path = tmp_path / "window.json"
    clock = VirtualClock(0.0)
    killed = RateWindow(3, window_s=60.0, clock=clock)
    assert killed.carry(path) == 0  # nothing to carry on a first run
    a, b, _ = killed.take(), killed.take(), killed.take()  # three requests leave at t=0
    clock.sleep(5.0)
    killed.settle(a)
    killed.settle(b)  # two return at t=5; the third is still out when the process dies
    resumed_clock = VirtualClock(10.0)  # the resume, 10 s after the first requests
    resumed = RateWindow(3, window_s=60.0, clock=resumed_clock)
    assert resumed.carry(path) == 3
    for _ in range(3):
        resumed.take()
    # a and b (settled at 5) leave the window at 65; the one out at the kill counts from the resume (10) to 70:
    # the 1st take waits 55 s, the 2nd fits beside it, the 3rd waits 5 s more
    assert resumed_clock.slept == [55.0, 5.0] and resumed_clock.t == 70.0


@pytest.mark.unit
def test_the_carried_file_is_rewritten_before_a_request_leaves(tmp_path: Path):
    path = tmp_path / "window.json"
    clock = VirtualClock(100.0)
    win = RateWindow(5, window_s=60.0, clock=clock)
    win.carry(path)
    slot = win.take()
    assert json.loads(path.read_text())["slots"] == [[100.0, 1.0, True]]  # out: a resume counts it from its start
    clock.sleep(2.0)
    win.settle(slot)
    assert json.loads(path.read_text())["slots"] == [[102.0, 1.0, False]]  # returned at 102


@pytest.mark.unit
def test_a_window_file_it_did_not_write_is_an_error_naming_it(tmp_path: Path):
    path = tmp_path / "window.json"
    path.write_text('{"slots": [[1.0]]}')
    with pytest.raises(ValueError, match="window.json: not a rate window"):
        RateWindow(3, clock=VirtualClock()).carry(path)


@pytest.mark.integration
@pytest.mark.block_network(allowed_hosts=[r"127\.0\.0\.1$"])  # its API is on loopback
def test_a_client_resumed_from_the_same_folder_keeps_the_api_window(tmp_path: Path):
    from harness.llm.client import LLMClient

    with SimulatedAPI(lambda m, p: "ok", latency_s=0.0) as spare:  # the first call's set-up (imports), now
        LLMClient("openai/sim", api_base=spare.api_base, api_key="sk-sim").complete("warm-up", use_cache=False)
    clock = ScaledClock(30)  # a simulated 60 s window lasts 2 s; the six calls take milliseconds
    with SimulatedAPI(lambda m, p: "ok", latency_s=0.0, rpm=3, clock=clock) as api:
        carried = []
        for run in range(2):  # the second client is a fresh process's: only the folder is shared
            llm = LLMClient("openai/sim", api_base=api.api_base, api_key="sk-sim", concurrency=1,
                            requests_per_minute=3, max_rate_limit_retries=0, max_attempts=1, clock=clock)
            carried.append(llm.carry_rate_windows(tmp_path))
            assert [llm.complete(f"q{run}{i}", use_cache=False).text for i in range(3)] == ["ok"] * 3
        log = api.log
    assert (tmp_path / RATE_WINDOW_FILE.format("requests")).exists() and carried[0] == 0 and carried[1] >= 1
    # an empty window at the second start would have sent into the first client's minute and met the API's 429
    assert dict(log.statuses) == {200: 6}
    assert SimulatedLog().peak_rate(60.0, log.arrivals) == 3 and log.arrivals[3] - log.arrivals[0] >= 60.0


@pytest.mark.integration
@pytest.mark.block_network(allowed_hosts=[r"127\.0\.0\.1$"])  # its API is on loopback
def test_a_throttling_api_answers_429_outside_its_window():
    from harness.llm.client import LLMClient, LLMError

    with SimulatedAPI(lambda m, p: "ok", latency_s=0.0, rpm=100, throttle_rate=1.0, retry_after_s=0.5) as api:
        llm = LLMClient("openai/sim", api_base=api.api_base, api_key="sk-sim", concurrency=1, max_attempts=1,
                        max_rate_limit_retries=1, clock=VirtualClock())
        with pytest.raises(LLMError):
            llm.complete("q", use_cache=False)
        assert dict(api.log.statuses) == {429: 2} and len(api._window) == 0  # not counted against the limit
    assert llm.clock.slept == [0.5]  # the client held its retry for the throttle's Retry-After
