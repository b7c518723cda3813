"""Client-wide limits on LLM calls under concurrency: an adaptive concurrency limit that halves on a burst
of 429s (and pauses every thread until the server's Retry-After) and grows back slowly on success, as
Inspect's does; and optional requests-per-minute / tokens-per-minute windows."""
from __future__ import annotations

import threading
import time
from collections import deque
from typing import Callable


class AdaptiveLimit:
    """At most `limit` calls in flight, `limit` between 1 and `maximum`.

    `rate_limited(retry_after)`: halve the limit (once per `burst_s`, so one burst of 429s from many threads
    counts once) and hold every new call until `retry_after` seconds from now. `succeeded()`: after `limit`
    successes in a row, raise the limit by one (slow recovery)."""

    def __init__(self, maximum: int, *, burst_s: float = 1.0, clock: Callable[[], float] = time.monotonic):
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
                wait = self.paused_until - self._clock()
                if wait <= 0 and self.in_flight < self.limit:
                    self.in_flight += 1
                    return
                self._cond.wait(timeout=wait if wait > 0 else None)

    def release(self) -> None:
        with self._cond:
            self.in_flight -= 1
            self._cond.notify_all()

    def rate_limited(self, retry_after: float | None) -> None:
        with self._cond:
            now = self._clock()
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
    """At most `per_minute` units (requests, or tokens) started in any 60-second window; `take(n)` waits."""

    def __init__(self, per_minute: float, *, window_s: float = 60.0, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep):
        if per_minute <= 0:
            raise ValueError("per_minute must be positive")
        self.per_minute, self.window_s = float(per_minute), window_s
        self._clock, self._sleep = clock, sleep
        self._events: deque[tuple[float, float]] = deque()
        self._used = 0.0
        self._lock = threading.Lock()

    def _expire(self, now: float) -> None:
        while self._events and self._events[0][0] <= now - self.window_s:
            self._used -= self._events.popleft()[1]

    def take(self, n: float = 1.0) -> None:
        n = min(float(n), self.per_minute)  # one request larger than the budget waits for an empty window
        while True:
            with self._lock:
                now = self._clock()
                self._expire(now)
                if self._used + n <= self.per_minute:
                    self._events.append((now, n))
                    self._used += n
                    return
                wait = self._events[0][0] + self.window_s - now
            self._sleep(max(wait, 0.001))

    def add(self, n: float) -> None:
        """Count `n` more units now without waiting (e.g. the tokens a finished call used)."""
        with self._lock:
            now = self._clock()
            self._expire(now)
            self._events.append((now, float(n)))
            self._used += float(n)
