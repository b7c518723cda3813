"""Negative controls for live LLM runs: concurrency, the rate window, retries, the budget cap and the cost estimate."""
from __future__ import annotations

from typing import Any

from harness.plugin.controls.registry import control


@control("llm-calls-serialised", breaks="the LLM client lets one call at a time through, whatever its concurrency")
def _serialised(mp: Any) -> None:
    from harness.llm import limits

    orig = limits.AdaptiveLimit.__init__

    def init(self, maximum, **kw):
        orig(self, 1, **kw)

    mp.setattr(limits.AdaptiveLimit, "__init__", init)


@control("rpm-limit-ignored", breaks="the client's requests-per-minute window lets every request through at once")
def _rpm_ignored(mp: Any) -> None:
    from harness.llm import limits

    mp.setattr(limits.RateWindow, "take", lambda self, n=1.0: [self._clock.monotonic(), n])  # a slot, never a wait


@control("rate-window-not-carried", breaks="a resumed run starts with an empty rate window: the requests the killed "
                                           "run sent in its last minute no longer count")
def _window_not_carried(mp: Any) -> None:
    from pathlib import Path

    from harness.llm import limits

    orig = limits.RateWindow.carry

    def carry(self, path):
        Path(path).unlink(missing_ok=True)  # what the killed run left is forgotten; the window is still written
        return orig(self, path)

    mp.setattr(limits.RateWindow, "carry", carry)


@control("server-errors-not-retried", breaks="a 500 or a timeout is a permanent failure (no 1/2/4 s retries)")
def _no_retry(mp: Any) -> None:
    from harness.llm import client

    orig = client._retryable

    def retryable(exc):
        _, status = orig(exc)
        return False, status

    mp.setattr(client, "_retryable", retryable)


@control("budget-cap-ignored", breaks="the run's cost cap never refuses a call (spend is recorded, nothing stops)")
def _cap_ignored(mp: Any) -> None:
    from harness.llm import spend

    def reserve(self, usd):
        with self._lock:
            self.in_flight_usd += usd
        return usd

    mp.setattr(spend.Spend, "reserve", reserve)


@control("estimate-prompt-tokens-ignored", breaks="the cost estimate counts answers only, not the prompts sent")
def _estimate_no_prompt(mp: Any) -> None:
    from harness.llm import estimate

    orig = estimate.token_counter

    def token_counter(model):
        count, name = orig(model)
        return (lambda x: count(x) if isinstance(x, str) else 0), name

    mp.setattr(estimate, "token_counter", token_counter)
