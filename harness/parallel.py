"""The one way the harness runs a loop concurrently: a bounded thread pool whose tasks see the caller's
context variables (which technique is spending, which trace is charged), results in input order."""
from __future__ import annotations

import contextvars
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Generic, Iterable, TypeVar

T = TypeVar("T")
R = TypeVar("R")


def seconds_for(seconds: float, done: int, todo: int) -> float | None:
    """The seconds `todo` more items take at the pace of `done` items that took `seconds`: 0 with none to do, None
    with none done (no pace to estimate from)."""
    if todo <= 0:
        return 0.0
    return seconds / done * todo if done else None


def ordered_map(fn: Callable[[T], R], items: Iterable[T], concurrency: int) -> list[R]:
    """`[fn(x) for x in items]` with at most `concurrency` running at once (sequential at 1); each task runs in
    a copy of the caller's context. The first exception raised by a task is raised here."""
    xs = list(items)
    if concurrency <= 1 or len(xs) <= 1:
        return [fn(x) for x in xs]
    with ThreadPoolExecutor(max_workers=min(concurrency, len(xs))) as pool:
        futures = [pool.submit(contextvars.copy_context().run, fn, x) for x in xs]
        return [f.result() for f in futures]


class LazyMap(Generic[T, R]):
    """`fn` over `items`, drawn on demand in input order: `upto(n)` runs only the items not yet run (at most
    `concurrency` at once), so a claim decided at an early look (harness.stats.sequential) stops spending, and
    claims reading the same items share their results. `stage` names a progress line for each draw; `seconds_of(r)`,
    where given, is what a result took when it was measured (a replayed one: then, not now), and the pace that
    `seconds_to` estimates from is the larger of the draw's wall time and their sum over the concurrency."""

    def __init__(self, fn: Callable[[T], R], items: Iterable[T], concurrency: int, *, stage: str | None = None,
                 seconds_of: Callable[[R], float] | None = None):
        self.fn, self.items, self.concurrency, self.stage = fn, list(items), concurrency, stage
        self.seconds_of = seconds_of
        self._results: list[R] = []
        self._lock = threading.Lock()
        self.seconds = 0.0  # wall time of the draws so far (or what `seconds_of` says their results took)

    def seconds_to(self, n: int) -> float | None:
        """Estimated seconds to draw the first `n` items from here: the seconds per item of the draws so far times
        the items still to draw; 0 where they are drawn; None where nothing is drawn to estimate from."""
        return seconds_for(self.seconds, len(self._results), min(n, len(self.items)) - len(self._results))

    @property
    def available(self) -> int:
        return len(self.items)

    @property
    def drawn(self) -> int:
        """Items run so far (by any caller)."""
        return len(self._results)

    def upto(self, n: int) -> list[R]:
        """The results for the first `n` items (all of them when n exceeds the set)."""
        n = min(n, len(self.items))
        with self._lock:
            todo = self.items[len(self._results):n]
            if todo:
                fn = self.fn
                if self.stage:
                    from harness.progress import progress

                    bar = progress(f"{self.stage} ({len(self._results) + 1}-{n} of {len(self.items)})", len(todo))

                    def fn(x: T) -> R:
                        out = self.fn(x)
                        bar.advance()
                        return out
                t0 = time.perf_counter()
                try:
                    new = ordered_map(fn, todo, self.concurrency)
                finally:
                    wall = time.perf_counter() - t0
                    if self.stage:
                        bar.close()
                if self.seconds_of is not None and new:  # results replayed as measured: their seconds then
                    wall = max(wall, sum(self.seconds_of(r) for r in new) / min(max(self.concurrency, 1), len(new)))
                self._results += new
                self.seconds += wall
            return self._results[:n]

    def all(self) -> list[R]:
        return self.upto(len(self.items))
