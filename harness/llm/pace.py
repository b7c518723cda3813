"""The pace probe: the seconds one fixed request takes on a model, so that a run under `--budget` can cost a model
it has never timed (its claims' costs are the packaged book's, measured with another model) before its first test
rather than after it (`harness.plugin.budget`)."""
from __future__ import annotations

import statistics
import time
from typing import Any

from harness.prompts import load_prompts, render

__all__ = ["PROBE_CALLS", "probe_seconds"]

PROBE_CALLS = 3  # the first, one token long, warms the model (a server loads what it loads lazily); the rest timed


def probe_seconds(client: Any, *, calls: int = PROBE_CALLS) -> float:
    """The median seconds of the pace request (`harness/prompts/pace.yaml`) on `client`, uncached, over the calls
    after the first; each call's prompt is numbered apart, so no call reuses another's from the server's prompt
    cache. A failed call raises, as any model call does."""
    if calls < 2:
        raise ValueError(f"the pace probe needs at least 2 calls (one to warm the model), got {calls}")
    p = load_prompts("pace")
    seconds = []
    for i in range(calls):
        t0 = time.perf_counter()
        client.complete(render(p["user"], n=i + 1), system=p["system"], max_tokens=int(p["max_tokens"]) if i else 1,
                        temperature=0.0, use_cache=False)
        seconds.append(time.perf_counter() - t0)
    return float(statistics.median(seconds[1:]))
