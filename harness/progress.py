"""One live line per long stage (indexing, a technique's query loop, the E2-E4 study, RET's gates):
stage, done/total, elapsed, ETA, tokens and cost.

Nothing is shown unless a reporter is installed: the pytest plugin installs one on its terminal (updated in
place on a TTY, a line every ~10% otherwise, none under -q) and `ragharness run-experiments --progress` one
on stderr. Library code only asks for `progress(stage, total)` and calls `advance()`.

    with reporting(ProgressReporter(write_to(sys.stderr), tty=sys.stderr.isatty(), spend=spend)):
        bar = progress("hyde", len(queries))
        for q in queries:
            ...
            bar.advance()
"""
from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from typing import Callable, Iterator, TextIO

from harness.llm.spend import Spend

Write = Callable[[str, bool], None]  # (text, final): final lines end the stage's line


def format_seconds(s: float) -> str:
    """`42s`, `3m05s`, `1h02m`."""
    s = max(0, int(round(s)))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


def progress_line(stage: str, done: int, total: int, elapsed_s: float, tokens: int | None = None,
                  cost_usd: float | None = None) -> str:
    """`hyde: 12/40 (30%) 0m09s elapsed, ETA 21s, 3,210 tokens, $0.0042`."""
    pct = 100 * done / total if total else 100.0
    parts = [f"{stage}: {done}/{total} ({pct:.0f}%)", f"{format_seconds(elapsed_s)} elapsed"]
    if 0 < done < total:
        parts.append(f"ETA {format_seconds(elapsed_s / done * (total - done))}")
    if tokens:
        parts.append(f"{tokens:,} tokens")
    if cost_usd:
        parts.append(f"${cost_usd:.4f}")
    return ", ".join(parts)


class Progress:
    """A stage's counter; `advance()` is thread-safe and writes when the reporter's rules say so."""

    def __init__(self, reporter: "ProgressReporter | None", stage: str, total: int):
        self.reporter, self.stage, self.total = reporter, stage, max(0, total)
        self.done = 0
        self.t0 = time.perf_counter()
        self._lock = threading.Lock()
        self._shown_step = -1
        self._shown_at = 0.0
        self._closed = False
        spend = reporter.spend if reporter is not None else None
        self._base = spend.totals() if spend is not None else None

    def line(self) -> str:
        tokens = cost = None
        spend = self.reporter.spend if self.reporter is not None else None
        if spend is not None and self._base is not None:
            now = spend.totals()
            tokens = now.prompt_tokens + now.completion_tokens - self._base.prompt_tokens - self._base.completion_tokens
            cost = now.cost_usd - self._base.cost_usd
        return progress_line(self.stage, self.done, self.total, time.perf_counter() - self.t0, tokens, cost)

    def advance(self, n: int = 1) -> None:
        if self.reporter is None:
            return
        with self._lock:
            self.done = min(self.total, self.done + n) if self.total else self.done + n
            self.reporter.show(self)

    def set(self, done: int) -> None:
        """Set the count (for callbacks that report `done` rather than a step)."""
        if self.reporter is None:
            return
        with self._lock:
            self.done = done
            self.reporter.show(self)

    def close(self) -> None:
        """End the stage's line (idempotent; a stage that reached its total closes itself)."""
        if self.reporter is None:
            return
        with self._lock:
            if not self._closed:
                self._closed = True
                self.reporter.finish(self)


class ProgressReporter:
    """Decides when a stage's line is written: nothing for a stage shorter than `min_stage_s`; then in place on
    a TTY (at most every `min_interval_s`), else one line each time the stage passes another `step` of its
    total; and a last line when it ends."""

    def __init__(self, write: Write, *, tty: bool, spend: Spend | None = None, step: float = 0.1,
                 min_interval_s: float = 0.5, min_stage_s: float = 2.0):
        self.write, self.tty, self.spend = write, tty, spend
        self.step, self.min_interval_s, self.min_stage_s = step, min_interval_s, min_stage_s

    def show(self, p: Progress) -> None:
        if p._closed:
            return
        if p.total and p.done >= p.total:
            p._closed = True
            self.finish(p)
            return
        now = time.perf_counter()
        if now - p.t0 < self.min_stage_s:  # a short stage is not worth a line
            return
        if self.tty:
            if now - p._shown_at >= self.min_interval_s:
                p._shown_at = now
                self.write(p.line(), False)
            return
        steps = max(1, round(1 / self.step))
        step = p.done * steps // p.total if p.total else p.done  # integers: 30/100 is step 3, not 2.999...
        if step > max(p._shown_step, 0):  # from the first 10% on: an ETA from the first items says little
            p._shown_step = step
            self.write(p.line(), True)

    def finish(self, p: Progress) -> None:
        if p._shown_step >= 0 or p._shown_at or time.perf_counter() - p.t0 >= self.min_stage_s:
            self.write(p.line(), True)


_CURRENT: ProgressReporter | None = None
_CURRENT_LOCK = threading.Lock()


@contextmanager
def reporting(reporter: ProgressReporter | None) -> Iterator[ProgressReporter | None]:
    """Install `reporter` for the block (for every thread: worker threads report into the same line)."""
    global _CURRENT
    with _CURRENT_LOCK:
        previous, _CURRENT = _CURRENT, reporter
    try:
        yield reporter
    finally:
        with _CURRENT_LOCK:
            _CURRENT = previous


def progress(stage: str, total: int) -> Progress:
    """A counter for a stage of `total` steps, shown by the installed reporter (a silent one when none is)."""
    return Progress(_CURRENT, stage, total)


def write_to(stream: TextIO) -> Write:
    """A writer for a plain stream: in place (`\\r`, erased to the end of the line) until a final line."""
    lock = threading.Lock()

    def write(text: str, final: bool) -> None:
        with lock:
            stream.write("\r" + text + "\x1b[K" + ("\n" if final else "") if stream.isatty() else text + "\n")
            stream.flush()

    return write
