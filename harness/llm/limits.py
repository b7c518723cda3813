"""Client-wide limits on LLM calls under concurrency: an adaptive concurrency limit that halves on a burst
of 429s (and pauses every thread until the server's Retry-After) and grows back slowly on success, as
Inspect's does; and optional requests-per-minute / tokens-per-minute windows. Both measure time on a `Clock`
(harness.llm.clock: the wall clock unless a scaled or virtual one is given)."""
from __future__ import annotations

import threading

from harness.llm.clock import REAL_CLOCK, Clock


class AdaptiveLimit:
    """At most `limit` calls in flight, `limit` between 1 and `maximum`.

    `rate_limited(retry_after)`: halve the limit (once per `burst_s`, so one burst of 429s from many threads
    counts once) and hold every new call until `retry_after` seconds from now. `succeeded()`: after `limit`
    successes in a row, raise the limit by one (slow recovery)."""

    def __init__(self, maximum: int, *, burst_s: float = 1.0, clock: Clock = REAL_CLOCK):
        self.maximum = max(1, int(maximum))
        self.limit = self.maximum
        self.in_flight = 0
        self.paused_until = 0.0
        self.decreases = 0
        self._streak = 0
        self._last_decrease = float("-inf")
        self._burst_s, self._clock = burst_s, clock
        self._cond = threading.Condition()

    def acquire(self) -> None:
        with self._cond:
            while True:
                wait = self.paused_until - self._clock.monotonic()
                if wait <= 0 and self.in_flight < self.limit:
                    self.in_flight += 1
                    return
                self._clock.wait(self._cond, wait if wait > 0 else None)

    def release(self) -> None:
        with self._cond:
            self.in_flight -= 1
            self._cond.notify_all()

    def rate_limited(self, retry_after: float | None) -> None:
        with self._cond:
            now = self._clock.monotonic()
            if now - self._last_decrease >= self._burst_s:
                self.limit = max(1, self.limit // 2)
                self._last_decrease = now
                self.decreases += 1
            self._streak = 0
            if retry_after:
                self.paused_until = max(self.paused_until, now + retry_after)
            self._cond.notify_all()

    def succeeded(self) -> None:
        with self._cond:
            self._streak += 1
            if self.limit < self.maximum and self._streak >= self.limit:
                self.limit += 1
                self._streak = 0
                self._cond.notify_all()


class RateWindow:
    """At most `per_minute` units (requests, or tokens) in any 60-second window; `take(n)` waits for room.

    A server counts a request when it arrives, which is after the client took its slot (by the time the HTTP
    client sent it). `take` returns the slot; `settle(slot)` when the call has returned moves the slot's time
    to then, which is after the arrival, so the window holds every request at least 60 s past its arrival."""

    def __init__(self, per_minute: float, *, window_s: float = 60.0, clock: Clock = REAL_CLOCK):
        if per_minute <= 0:
            raise ValueError("per_minute must be positive")
        self.per_minute, self.window_s = float(per_minute), window_s
        self._clock = clock
        self._slots: list[list[float]] = []  # [time, units]
        self._lock = threading.Lock()

    def _expire(self, now: float) -> float:
        self._slots = [s for s in self._slots if s[0] > now - self.window_s]
        return sum(s[1] for s in self._slots)

    def take(self, n: float = 1.0) -> list[float]:
        n = min(float(n), self.per_minute)  # one request larger than the budget waits for an empty window
        while True:
            with self._lock:
                now = self._clock.monotonic()
                if self._expire(now) + n <= self.per_minute:
                    slot = [now, n]
                    self._slots.append(slot)
                    return slot
                wait = min(s[0] for s in self._slots) + self.window_s - now
            self._clock.sleep(max(wait, 0.001))

    def settle(self, slot: list[float]) -> None:
        """The call that took `slot` has returned: count it from now."""
        with self._lock:
            slot[0] = max(slot[0], self._clock.monotonic())

    def add(self, n: float) -> None:
        """Count `n` more units now without waiting (e.g. the tokens a finished call used beyond its estimate)."""
        with self._lock:
            self._slots.append([self._clock.monotonic(), float(n)])
