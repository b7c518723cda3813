"""Every LLM call this process makes, whichever client made it (with or without the run's `Spend`): a
process-wide tally of answered calls, their tokens and response-cache hits. The report's timing section takes
differences of it around each fixture setup and test phase; calls made on worker threads during a phase are
the phase's, as they are in the spend ledger. A measurement that runs beside others (one item of a study ruled
while others are) counts its own calls in a `scope`."""
from __future__ import annotations

import contextvars
import threading
from contextlib import contextmanager
from typing import Iterator

COUNTS = ("llm_calls", "prompt_tokens", "completion_tokens", "cache_hits")
# the scopes open in this context: a task started through `harness.parallel` runs in a copy, so its calls count in
# the scopes open where it was started, and not in those of the tasks beside it
_SCOPES: contextvars.ContextVar[tuple[dict[str, int], ...]] = contextvars.ContextVar("rag_harness_meter_scopes",
                                                                                   default=())


class Meter:
    """A thread-safe running count of calls (answered requests, cache hits apart), tokens and cache hits."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts = dict.fromkeys(COUNTS, 0)

    def _add(self, **counts: int) -> None:
        with self._lock:
            for tally in (self._counts, *_SCOPES.get()):
                for name, n in counts.items():
                    tally[name] += n

    def call(self, prompt_tokens: int, completion_tokens: int) -> None:
        """One answered request (a cache hit is not one: see `cache_hit`)."""
        self._add(llm_calls=1, prompt_tokens=int(prompt_tokens or 0), completion_tokens=int(completion_tokens or 0))

    def cache_hit(self) -> None:
        """One call answered from the response cache: no request, no tokens billed."""
        self._add(cache_hits=1)

    def snapshot(self) -> dict[str, int]:
        """The counts so far."""
        with self._lock:
            return dict(self._counts)

    @contextmanager
    def scope(self) -> Iterator[dict[str, int]]:
        """The counts of the calls made while it is open in this context and in the tasks it starts (through
        `harness.parallel`), not those of other threads: one measurement's own calls while others run beside it."""
        counts = dict.fromkeys(COUNTS, 0)
        token = _SCOPES.set((*_SCOPES.get(), counts))
        try:
            yield counts
        finally:
            _SCOPES.reset(token)


METER = Meter()
