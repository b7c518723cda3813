"""Client-wide limits on LLM calls under concurrency: an adaptive concurrency limit that halves on a burst
of 429s (and pauses every thread until the server's Retry-After) and grows back slowly on success, as
Inspect's does; and optional requests-per-minute / tokens-per-minute windows. Both measure time on a `Clock`
(harness.llm.clock: the wall clock unless a scaled or virtual one is given)."""
from __future__ import annotations

import json
import os
import threading
from pathlib import Path

from harness.llm.clock import REAL_CLOCK, Clock

RATE_WINDOW_FILE = ".rate-window-{}.json"  # a carried window's file in a run's folder ({}: requests, tokens)


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
    to then, which is after the arrival, so the window holds every request at least 60 s past its arrival.

    `carry(path)` makes the window outlive the process: a resumed run counts the requests the killed one sent."""

    def __init__(self, per_minute: float, *, window_s: float = 60.0, clock: Clock = REAL_CLOCK):
        if per_minute <= 0:
            raise ValueError("per_minute must be positive")
        self.per_minute, self.window_s = float(per_minute), window_s
        self._clock = clock
        self._slots: list[list[float]] = []  # [time, units, 1.0 while the call is out (taken, not settled)]
        self._lock = threading.Lock()
        self._path: Path | None = None

    def carry(self, path: str | Path) -> int:
        """Keep this window in `path` across runs: count the slots a killed (or finished) run left there, then
        rewrite the file whenever a slot is taken (before its request leaves) or settled. A call the earlier run
        had out counts from now: it may have reached the server any time before the kill. Returns the slots
        read that still fall in the window."""
        path = Path(path)
        with self._lock:
            now, offset = self._clock.monotonic(), self._clock.wall() - self._clock.monotonic()
            read = 0
            if path.exists():
                try:
                    saved = json.loads(path.read_text(encoding="utf-8"))["slots"]
                    slots = [(float(w), float(n), bool(out)) for w, n, out in saved]
                except (ValueError, KeyError, TypeError) as exc:
                    raise ValueError(f"{path}: not a rate window this harness wrote ({exc})") from None
                for w, n, out in slots:
                    t = now if out else min(w - offset, now)  # stamped in the future (a clock step): now
                    if t > now - self.window_s:
                        self._slots.append([t, n, 0.0])
                        read += 1
            self._path = path
            self._save(now)
        return read

    def _save(self, now: float) -> None:
        """Write the window's slots (as epoch readings of the clock) to the carried file; the lock is held."""
        if self._path is None:
            return
        offset = self._clock.wall() - now
        slots = [[s[0] + offset, s[1], s[2] > 0] for s in self._slots if s[0] > now - self.window_s]
        tmp = self._path.with_name(f"{self._path.name}.{os.getpid()}.tmp")
        self._path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps({"window_s": self.window_s, "slots": slots}), encoding="utf-8")
        os.replace(tmp, self._path)  # whole or not at all, even under kill -9

    def _expire(self, now: float) -> float:
        self._slots = [s for s in self._slots if s[0] > now - self.window_s]
        return sum(s[1] for s in self._slots)

    def take(self, n: float = 1.0) -> list[float]:
        n = min(float(n), self.per_minute)  # one request larger than the budget waits for an empty window
        while True:
            with self._lock:
                now = self._clock.monotonic()
                if self._expire(now) + n <= self.per_minute:
                    slot = [now, n, 1.0]
                    self._slots.append(slot)
                    self._save(now)
                    return slot
                wait = min(s[0] for s in self._slots) + self.window_s - now
            self._clock.sleep(max(wait, 0.001))

    def settle(self, slot: list[float]) -> None:
        """The call that took `slot` has returned: count it from now."""
        with self._lock:
            now = self._clock.monotonic()
            slot[0] = max(slot[0], now)
            if len(slot) > 2:
                slot[2] = 0.0
            self._save(now)

    def add(self, n: float) -> None:
        """Count `n` more units now without waiting (e.g. the tokens a finished call used beyond its estimate)."""
        with self._lock:
            now = self._clock.monotonic()
            self._slots.append([now, float(n), 0.0])
            self._save(now)
