"""The time that rate windows, Retry-After pauses, retry backoff and the simulated API's latency are measured in.

`RealClock` (the default everywhere) is the wall clock. `ScaledClock(k)` runs k times faster: one simulated
second passes in 1/k real seconds, and its readings are `time.monotonic() * k`, so two processes with the same
k (the simulated server and a client it serves) read the same simulated time. `VirtualClock` never runs on its
own: `sleep` and a timed wait advance it at once, which is sound only where one thread waits (unit tests); it
raises once it passes its horizon, so a loop that waits on it but reads another clock fails instead of spinning.
`wall()` reads the same clock against the epoch (the real clock's `time.time()`, scaled alike): what a reading
is written down as when it must outlive the process (a rate window carried across a resume).
"""
from __future__ import annotations

import threading
import time
from typing import Protocol


class Clock(Protocol):
    """Seconds on some clock: read them, sleep for them, wait on a condition for at most that many."""

    def monotonic(self) -> float:
        """Now, in this clock's seconds (only differences are meaningful)."""
        ...

    def wall(self) -> float:
        """Now, in this clock's seconds since the epoch (comparable across processes and restarts)."""
        ...

    def sleep(self, seconds: float) -> None:
        """Block for `seconds` of this clock's time."""
        ...

    def wait(self, cond: threading.Condition, seconds: float | None) -> None:
        """`cond.wait` (its lock held) for at most `seconds` of this clock's time (None: until notified)."""
        ...


class RealClock:
    """The wall clock (`time.monotonic`, `time.sleep`)."""

    def monotonic(self) -> float:
        """Now, in real seconds."""
        return time.monotonic()

    def wall(self) -> float:
        """Now, in real seconds since the epoch."""
        return time.time()

    def sleep(self, seconds: float) -> None:
        """Sleep `seconds` real seconds."""
        time.sleep(max(0.0, seconds))

    def wait(self, cond: threading.Condition, seconds: float | None) -> None:
        """Wait on `cond` for at most `seconds` real seconds."""
        cond.wait(timeout=seconds)

    def __repr__(self) -> str:
        return "RealClock()"


class ScaledClock:
    """A clock `scale` times faster than the wall clock: 1 simulated second = 1/scale real seconds."""

    def __init__(self, scale: float):
        if scale <= 0:
            raise ValueError("scale must be positive")
        self.scale = float(scale)

    def monotonic(self) -> float:
        """Now, in simulated seconds (the same reading in every process with this scale)."""
        return time.monotonic() * self.scale

    def wall(self) -> float:
        """Now, in simulated seconds since the epoch (the epoch's seconds, scaled)."""
        return time.time() * self.scale

    def sleep(self, seconds: float) -> None:
        """Sleep `seconds` simulated seconds (seconds / scale real ones)."""
        time.sleep(max(0.0, seconds) / self.scale)

    def wait(self, cond: threading.Condition, seconds: float | None) -> None:
        """Wait on `cond` for at most `seconds` simulated seconds."""
        cond.wait(timeout=None if seconds is None else seconds / self.scale)

    def __repr__(self) -> str:
        return f"ScaledClock({self.scale:g})"


class VirtualClockOverrun(RuntimeError):
    """A virtual clock was slept past its horizon (something waits on it for a condition it never meets)."""


class VirtualClock:
    """A clock that stands still until slept on: `sleep(s)` and a timed `wait` add s at once (one thread only)."""

    def __init__(self, start: float = 0.0, *, horizon: float = 1e7):
        self.t, self.horizon = float(start), float(horizon)
        self.slept: list[float] = []

    def monotonic(self) -> float:
        """Now, in virtual seconds."""
        return self.t

    def wall(self) -> float:
        """Now, in virtual seconds (the virtual time line is its own epoch)."""
        return self.t

    def sleep(self, seconds: float) -> None:
        """Advance the clock by `seconds` (recorded in `slept`), without blocking."""
        self.slept.append(seconds)
        self.t += max(0.0, seconds)
        if self.t > self.horizon:
            raise VirtualClockOverrun(f"virtual clock slept past its horizon ({self.horizon:g} s)")

    def wait(self, cond: threading.Condition, seconds: float | None) -> None:
        """A timed wait advances the clock by `seconds`; an untimed one waits for a notify (another thread's)."""
        if seconds is None:
            cond.wait()
        else:
            self.sleep(seconds)

    def __repr__(self) -> str:
        return f"VirtualClock(t={self.t:g})"


REAL_CLOCK = RealClock()
