"""The one way the harness runs a loop concurrently: a bounded thread pool whose tasks see the caller's
context variables (which technique is spending, which trace is charged), results in input order."""
from __future__ import annotations

import contextvars
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterable, TypeVar

T = TypeVar("T")
R = TypeVar("R")


def ordered_map(fn: Callable[[T], R], items: Iterable[T], concurrency: int) -> list[R]:
    """`[fn(x) for x in items]` with at most `concurrency` running at once (sequential at 1); each task runs in
    a copy of the caller's context. The first exception raised by a task is raised here."""
    xs = list(items)
    if concurrency <= 1 or len(xs) <= 1:
        return [fn(x) for x in xs]
    with ThreadPoolExecutor(max_workers=min(concurrency, len(xs))) as pool:
        futures = [pool.submit(contextvars.copy_context().run, fn, x) for x in xs]
        return [f.result() for f in futures]
