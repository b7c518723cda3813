"""The E2/E3/E4 study drawn in looks: its queries in a fixed order (each query type in turn), run on demand, so that
claims decided on the first queries stop the study there and claims about the whole selection draw the rest. Each
batch can be replayed as measured by an earlier run (`harness.replay`): batches are split at multiples of the look
size, so a longer run after a shorter one replays what the shorter one drew."""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from harness.data.experiment import QueryInput
from harness.parallel import seconds_for
from harness.runner import ExperimentRun, RunSummary

__all__ = ["DRAW_ORDER", "DrawnStudy", "draw_order"]

# what a row records of the order the study's queries are drawn in (`rag_check_sequential`'s `order`)
DRAW_ORDER = {"order": "each query type in turn, file order within a type", "seed": None}

# replay(name, compute, **parts) -> (value, measured_at or None): `harness.replay.Replay` or the `rag_replay` fixture
Replayer = Callable[..., tuple[Any, "str | None"]]


def draw_order(queries: Sequence[QueryInput]) -> list[QueryInput]:
    """The queries taking each query type in turn (types in order of first appearance, file order within a type):
    its first n are the n queries `first_of_each_type(queries, n)` selects, so every prefix covers the types alike."""
    by_type: dict[str, list[QueryInput]] = {}
    for q in queries:
        by_type.setdefault(q.query_type, []).append(q)
    lanes = list(by_type.values())
    return [lane[i] for i in range(max(map(len, lanes), default=0)) for lane in lanes if i < len(lane)]


@dataclass
class _Batch:
    """What one batch of queries left: its rows by experiment, its failures, its wall time."""

    ids: list[str]
    rows: dict[str, list[dict[str, Any]]]
    written: dict[str, int]
    failed: dict[str, list[str]]
    empty: dict[str, list[str]]
    wall: float  # the set-up's seconds included
    chunks: int
    not_started: int = 0  # results the run's cost cap (--max-cost) left undrawn
    setup: float = 0.0  # of `wall`, the run's set-up (services, index) where this batch started it
    measured_at: str | None = None  # where replayed: when an earlier run measured it


@dataclass
class DrawnStudy:
    """The experiments over `queries` (in draw order), drawn on demand in batches split at multiples of `look_every`.
    `start()` sets the run up (services, index, output files) the first time a batch is not replayed; its seconds
    count in that batch's wall time. `replay` (optional) keeps each batch for a later run."""

    start: Callable[[], ExperimentRun]
    queries: list[QueryInput]
    look_every: int = 10
    replay: Replayer | None = None
    replay_parts: dict[str, Any] = field(default_factory=dict)
    batches: list[_Batch] = field(default_factory=list)
    _run: ExperimentRun | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def selected(self) -> int:
        return len(self.queries)

    @property
    def drawn(self) -> int:
        """Queries drawn so far (run or replayed), by any reader."""
        return sum(len(b.ids) for b in self.batches)

    @property
    def wall(self) -> float:
        """Seconds the batches drawn so far took when they were measured (set-up included)."""
        return sum(b.wall for b in self.batches)

    @property
    def replayed_from(self) -> str | None:
        """When the earliest replayed batch was measured; None where every batch ran now."""
        return min((b.measured_at for b in self.batches if b.measured_at), default=None)

    def seconds_to(self, n: int) -> float | None:
        """Estimated seconds to draw the first `n` queries from here: the seconds per query of the batches drawn so
        far (the run's set-up left out) times the queries still to draw; 0 where they are drawn; None where nothing
        is drawn to estimate from."""
        return seconds_for(self.wall - sum(b.setup for b in self.batches), self.drawn, min(n, self.selected) - self.drawn)

    def upto(self, n: int) -> dict[str, list[dict[str, Any]]]:
        """Each experiment's rows for the first `n` queries (all where n exceeds them), in draw order, drawing those
        not yet drawn; a query an experiment failed on has no row there."""
        n = min(n, self.selected)
        with self._lock:
            while self.drawn < n:  # never past n; split where a multiple of look_every falls in between
                end = min((self.drawn // self.look_every + 1) * self.look_every, n)
                self.batches.append(self._draw(self.queries[self.drawn:end]))
        ids = {q.query_id: i for i, q in enumerate(self.queries[:n])}
        out: dict[str, list[dict[str, Any]]] = {e: [] for b in self.batches for e in b.rows}
        for b in self.batches:
            for e, rows in b.rows.items():
                out[e].extend(r for r in rows if r["query_id"] in ids)
        return {e: sorted(rows, key=lambda r: ids[r["query_id"]]) for e, rows in out.items()}

    def summary(self) -> RunSummary:
        """The run summary of the batches drawn so far (written and failed results, chunks indexed, seconds)."""
        s = RunSummary(chunks=max((b.chunks for b in self.batches), default=0), seconds=self.wall,
                       not_started=sum(b.not_started for b in self.batches))
        s.budget_stopped = s.not_started > 0
        for b in self.batches:
            for e, k in b.written.items():
                s.written[e] = s.written.get(e, 0) + k
            for e, ids in b.failed.items():
                s.failed.setdefault(e, []).extend(ids)
            for e, ids in b.empty.items():
                s.empty.setdefault(e, []).extend(ids)
        return s

    def _draw(self, batch: list[QueryInput]) -> _Batch:
        ids = [q.query_id for q in batch]

        def compute() -> _Batch:
            t0, setup = time.perf_counter(), 0.0
            if self._run is None:
                self._run = self.start()
                setup = time.perf_counter() - t0
            run = self._run
            not_started = run.summary.not_started
            first = self.drawn + 1  # the batch follows what is drawn
            run.run(batch, stage=f" (queries {first}-{first + len(batch) - 1} of {self.selected}, "
                                 f"{len(run.experiments)} runs each)")
            wall = time.perf_counter() - t0
            from harness.techniques.e2e4.evaluation import load_rows

            mine = set(ids)  # counted from the files and the run's failures, so a retried batch counts once
            rows = {e: [r for r in load_rows(run.paths[e]) if r["query_id"] in mine] for e in run.experiments}
            s = run.summary
            failed = {e: sorted(set(s.failed[e]) & mine - {r["query_id"] for r in rows[e]}) for e in run.experiments}
            empty = {e: sorted(set(s.empty[e]) & set(failed[e])) for e in run.experiments}
            return _Batch(ids, rows, {e: len(rs) for e, rs in rows.items()}, failed, empty, wall, s.chunks,
                          s.not_started - not_started, setup)

        if self.replay is None:
            return compute()
        value, measured_at = self.replay("e2e4-draw", compute, queries=ids, **self.replay_parts)
        if measured_at is not None:
            value = _Batch(**{**value.__dict__, "measured_at": measured_at})
        return value
