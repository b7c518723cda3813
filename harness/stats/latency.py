"""Latency ratios measured in one run: two callables timed interleaved (A, B, A, B, ...), so drift and
noise hit both alike; the figure is the median of per-round ratios with its interquartile spread."""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np


@dataclass(frozen=True)
class LatencyRatio:
    median: float
    q25: float
    q75: float
    rounds: int
    baseline_median_s: float
    candidate_median_s: float

    def as_context(self) -> dict[str, Any]:
        return {"kind": "latency_ratio", "iqr": [self.q25, self.q75], "rounds": self.rounds,
                "baseline_median_s": self.baseline_median_s, "candidate_median_s": self.candidate_median_s}


def ratio_of(baseline_s: Sequence[float], candidate_s: Sequence[float]) -> LatencyRatio:
    b, c = np.asarray(baseline_s, float), np.asarray(candidate_s, float)
    r = c / b
    return LatencyRatio(float(np.median(r)), float(np.quantile(r, 0.25)), float(np.quantile(r, 0.75)), len(r),
                        float(np.median(b)), float(np.median(c)))


def interleaved_ratio(baseline: Callable[[Any], Any], candidate: Callable[[Any], Any], inputs: Sequence[Any], *,
                      warmup: int = 1, clock: Callable[[], float] = time.perf_counter) -> LatencyRatio:
    """Time candidate/baseline on each input, alternating which goes first; ratio = candidate / baseline."""
    for x in list(inputs)[:warmup]:
        baseline(x)
        candidate(x)
    tb: list[float] = []
    tc: list[float] = []
    for i, x in enumerate(inputs):
        order = [(baseline, tb), (candidate, tc)] if i % 2 == 0 else [(candidate, tc), (baseline, tb)]
        for fn, sink in order:
            t0 = clock()
            fn(x)
            sink.append(clock() - t0)
    return ratio_of(tb, tc)


def interleaved_best(baseline: Callable[[], Any], candidate: Callable[[], Any], rounds: int = 3, *,
                     clock: Callable[[], float] = time.perf_counter) -> tuple[float, float]:
    """The best (shortest) time of each callable over `rounds` rounds, alternating which goes first: (baseline,
    candidate) seconds; their ratio is a one-run figure the machine's load cannot tilt towards either side."""
    best = [float("inf"), float("inf")]
    for i in range(rounds):
        for side in ((0, 1) if i % 2 == 0 else (1, 0)):
            t0 = clock()
            (baseline, candidate)[side]()
            best[side] = min(best[side], clock() - t0)
    return best[0], best[1]
