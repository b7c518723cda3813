"""Negative controls for timing budgets: a clock that runs slow, for every spec bounding a duration."""
from __future__ import annotations

from typing import Any

from harness.plugin.controls.registry import control


@control("clock-runs-1000x-slow", breaks="every perf_counter interval reads 1000x its length (a machine 1000x slower)")
def _slow_clock(mp: Any) -> None:
    import time

    orig = time.perf_counter
    t0 = orig()
    mp.setattr(time, "perf_counter", lambda: t0 + (orig() - t0) * 1000.0)
