"""Every LLM call this process makes, whichever client made it (with or without the run's `Spend`): a
process-wide tally of answered calls, their tokens and response-cache hits. The report's timing section takes
differences of it around each fixture setup and test phase; calls made on worker threads during a phase are
the phase's, as they are in the spend ledger."""
from __future__ import annotations

import threading

COUNTS = ("llm_calls", "prompt_tokens", "completion_tokens", "cache_hits")


class Meter:
    """A thread-safe running count of calls (answered requests, cache hits apart), tokens and cache hits."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts = dict.fromkeys(COUNTS, 0)

    def call(self, prompt_tokens: int, completion_tokens: int) -> None:
        """One answered request (a cache hit is not one: see `cache_hit`)."""
        with self._lock:
            self._counts["llm_calls"] += 1
            self._counts["prompt_tokens"] += int(prompt_tokens or 0)
            self._counts["completion_tokens"] += int(completion_tokens or 0)

    def cache_hit(self) -> None:
        """One call answered from the response cache: no request, no tokens billed."""
        with self._lock:
            self._counts["cache_hits"] += 1

    def snapshot(self) -> dict[str, int]:
        """The counts so far."""
        with self._lock:
            return dict(self._counts)


METER = Meter()
