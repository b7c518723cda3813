"""What a run spends on LLM calls, per technique and role, and the cap on it (`--max-cost`).

Every client of a run records into one `Spend`: calls, tokens and dollars, keyed by the technique whose
query made the call (`spending_for`, set by `Technique.run`), the client's role (`pipeline`, or `judge` for
judge models) and the model. With `max_usd` set it is also the run's budget: before a request leaves, the
client reserves that call's estimated cost, and a call whose reservation would take spent + in-flight past
the cap is never started (`BudgetExhausted`). Cache hits cost nothing and are counted apart.
"""
from __future__ import annotations

import threading
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import asdict, dataclass
from typing import Any, Iterator

_TECHNIQUE: ContextVar[str | None] = ContextVar("harness_spending_for", default=None)
UNATTRIBUTED = "(outside any technique)"


@contextmanager
def spending_for(technique: str) -> Iterator[None]:
    """Charge the calls made inside this block to `technique` (an outer technique keeps them: WSOP's HyDE
    calls are WSOP's)."""
    if _TECHNIQUE.get() is not None:
        yield
        return
    token = _TECHNIQUE.set(technique)
    try:
        yield
    finally:
        _TECHNIQUE.reset(token)


def current_technique() -> str:
    return _TECHNIQUE.get() or UNATTRIBUTED


class BudgetExhausted(RuntimeError):
    """A call would take the run past its cost cap, so it was not started. Not an LLMError: no technique
    absorbs it as a model failure and falls back; the claim it was measuring reads `budget`."""

    def __init__(self, message: str, *, spent_usd: float, cap_usd: float):
        super().__init__(message)
        self.spent_usd, self.cap_usd = spent_usd, cap_usd


COUNTS = ("calls", "cached_calls", "failed_calls", "prompt_tokens", "completion_tokens", "cost_usd", "unpriced_calls")


@dataclass
class SpendRow:
    technique: str
    role: str
    model: str
    calls: int = 0  # requests billed (cache hits excluded)
    cached_calls: int = 0
    failed_calls: int = 0  # requests sent that failed (errors, 429s, timeouts): not billed, not in `calls`
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    unpriced_calls: int = 0  # calls whose model has no known price: their cost is unknown, not zero


class Spend:
    """A thread-safe ledger of a run's LLM spend, and its budget when `max_usd` is set."""

    def __init__(self, max_usd: float | None = None):
        if max_usd is not None and max_usd < 0:
            raise ValueError(f"max_usd must be >= 0, got {max_usd}")
        self.max_usd = max_usd
        self._rows: dict[tuple[str, str, str], SpendRow] = {}
        self._lock = threading.Lock()
        self.spent_usd = 0.0
        self.in_flight_usd = 0.0
        self.refused = 0  # calls not started because of the cap

    # ------------------------------------------------------------------ budget
    def reserve(self, usd: float) -> float:
        """Hold `usd` for a call about to start; raises BudgetExhausted when spent + in flight + `usd` would
        pass the cap. Returns the amount held (give it back to `settle`)."""
        with self._lock:
            if self.max_usd is not None and self.spent_usd + self.in_flight_usd + usd > self.max_usd:
                self.refused += 1
                raise BudgetExhausted(
                    f"the run's cost cap of ${self.max_usd:.4f} is reached: spent ${self.spent_usd:.4f}, "
                    f"${self.in_flight_usd:.4f} in flight, the next call is estimated at ${usd:.6f}",
                    spent_usd=self.spent_usd, cap_usd=self.max_usd)
            self.in_flight_usd += usd
            return usd

    def settle(self, reserved: float, actual_usd: float | None) -> None:
        """A reserved call ended: release its hold and add what it really cost (None: unknown, nothing added;
        0 for a request that failed and was not billed)."""
        with self._lock:
            self.in_flight_usd = max(0.0, self.in_flight_usd - reserved)
            self.spent_usd += actual_usd or 0.0

    # ------------------------------------------------------------------ ledger
    def record(self, *, model: str, role: str, prompt_tokens: int, completion_tokens: int, cost_usd: float | None,
               cached: bool = False, technique: str | None = None) -> None:
        """One finished call, charged to `technique` (default: the one running in this context)."""
        key = (technique or current_technique(), role, model)
        with self._lock:
            row = self._rows.get(key)
            if row is None:
                row = self._rows[key] = SpendRow(*key)
            if cached:
                row.cached_calls += 1
                return
            row.calls += 1
            row.prompt_tokens += prompt_tokens
            row.completion_tokens += completion_tokens
            if cost_usd is None:
                row.unpriced_calls += 1
            else:
                row.cost_usd += cost_usd

    def record_failure(self, *, model: str, role: str, technique: str | None = None) -> None:
        """One request that was sent and failed (it is retried or raised by the caller; nothing is billed)."""
        key = (technique or current_technique(), role, model)
        with self._lock:
            row = self._rows.get(key)
            if row is None:
                row = self._rows[key] = SpendRow(*key)
            row.failed_calls += 1

    def rows(self) -> list[SpendRow]:
        with self._lock:
            return [SpendRow(**asdict(r)) for r in sorted(self._rows.values(),
                                                           key=lambda r: (r.role, r.technique, r.model))]

    def spent_by(self, technique: str) -> float:
        """USD charged so far to `technique`, every role and model (cache hits and unpriced calls add nothing)."""
        with self._lock:
            return sum(r.cost_usd for r in self._rows.values() if r.technique == technique)

    def totals(self, role: str | None = None) -> SpendRow:
        """The sum over every row (of one role when given)."""
        total = SpendRow("(all)", role or "(all)", "(all)")
        for r in self.rows():
            if role is None or r.role == role:
                for f in COUNTS:
                    setattr(total, f, getattr(total, f) + getattr(r, f))
        return total

    def rows_since(self, before: list[SpendRow]) -> list[dict[str, Any]]:
        """What was spent since `before` (an earlier `rows()`), per technique, role and model: the rows with at
        least one call since, as dicts of the key and the differences of the counts."""
        earlier = {(r.technique, r.role, r.model): r for r in before}
        out = []
        for r in self.rows():
            b = earlier.get((r.technique, r.role, r.model))
            delta = {f: getattr(r, f) - (getattr(b, f) if b else 0) for f in COUNTS}
            if delta["calls"] or delta["cached_calls"]:
                out.append({"technique": r.technique, "role": r.role, "model": r.model, **delta})
        return out

    def to_dict(self) -> dict[str, Any]:
        """For results.json: rows, totals per role, the cap and what it refused."""
        roles = sorted({r.role for r in self.rows()})
        return {"max_usd": self.max_usd, "spent_usd": self.spent_usd, "refused_calls": self.refused,
                "rows": [asdict(r) for r in self.rows()],
                "by_role": {role: asdict(self.totals(role)) for role in roles},
                "total": asdict(self.totals())}
