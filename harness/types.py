"""Core value types shared by every layer: documents, chunks, queries, hits, rankings and traces."""
from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import asdict, dataclass, field
from typing import Any, Iterator


@dataclass(frozen=True)
class Document:
    """A retrievable unit as it comes from a corpus (BEIR `_id,title,text`)."""

    id: str
    text: str
    title: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def full_text(self) -> str:
        """Title and text joined the way BEIR encoders see them."""
        if self.title and not self.text.startswith(self.title):
            return f"{self.title}. {self.text}"
        return self.text


@dataclass(frozen=True)
class Chunk:
    """A piece of a document, with where it came from (filename, section, chunk index)."""

    id: str
    doc_id: str
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Query:
    id: str
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Hit:
    """One retrieved item: its id, score (higher is better) and, where known, its text."""

    id: str
    score: float
    text: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class Ranking:
    """The hits for one query, best first."""

    query_id: str
    hits: list[Hit]

    @property
    def ids(self) -> list[str]:
        return [h.id for h in self.hits]

    def top(self, k: int) -> "Ranking":
        return Ranking(self.query_id, self.hits[:k])


@dataclass
class Stage:
    """One timed step of a pipeline run, with the LLM usage it caused."""

    name: str
    seconds: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    calls: int = 0
    unpriced_calls: int = 0  # calls whose model has no price: their cost is unknown, not zero
    detail: dict[str, Any] = field(default_factory=dict)


# the stages open in this context, per trace: a task started by `harness.parallel.ordered_map` sees its caller's
# open stages, so a call made on a worker thread is charged where the caller's own call would be
_OPEN_STAGES: ContextVar[dict[int, tuple[Stage, ...]] | None] = ContextVar("harness_open_stages", default=None)


@dataclass
class Trace:
    """What a technique did: stages with timings/tokens/cost, and named events (which branch ran).

    Tests assert on traces (e.g. WSOP-001 reads `trace.called("hyde")`), never on mocks.
    """

    stages: list[Stage] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def __getstate__(self) -> dict[str, Any]:
        """A trace kept for a later run (`harness.replay`): its stages and events, not its lock."""
        return {"stages": self.stages, "events": self.events}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.stages, self.events, self._lock = state["stages"], state["events"], threading.Lock()

    def _stack(self) -> tuple[Stage, ...]:
        return (_OPEN_STAGES.get() or {}).get(id(self), ())

    @contextmanager
    def stage(self, name: str, **detail: Any) -> Iterator[Stage]:
        """Time a block as a stage; LLM calls inside it (in this context, and in tasks it starts through
        `harness.parallel.ordered_map`) are charged to it."""
        st = Stage(name=name, detail=dict(detail))
        opened = _OPEN_STAGES.get() or {}
        token = _OPEN_STAGES.set({**opened, id(self): opened.get(id(self), ()) + (st,)})
        t0 = time.perf_counter()
        try:
            yield st
        finally:
            st.seconds = time.perf_counter() - t0
            _OPEN_STAGES.reset(token)
            with self._lock:
                self.stages.append(st)
            self.event(name, kind="stage")

    def record_llm_call(self, prompt_tokens: int, completion_tokens: int, cost_usd: float | None,
                        seconds: float = 0.0) -> None:
        """Charge one LLM call to this context's innermost open stage; outside any stage it becomes an `llm`
        stage of its own that carries the call's wall time (so `seconds()` misses no call). `cost_usd=None`:
        unpriced. Safe to call from several threads at once."""
        stack = self._stack()
        with self._lock:
            if stack:
                st = stack[-1]
            else:
                st = Stage(name="llm", seconds=seconds)
                self.stages.append(st)
            st.prompt_tokens += prompt_tokens
            st.completion_tokens += completion_tokens
            if cost_usd is None:
                st.unpriced_calls += 1
            else:
                st.cost_usd += cost_usd
            st.calls += 1

    def event(self, name: str, **data: Any) -> None:
        with self._lock:
            self.events.append({"name": name, **data})

    def called(self, name: str) -> bool:
        """Whether a stage or event of this name happened."""
        return any(e["name"] == name for e in self.events)

    def seconds(self, name: str | None = None) -> float:
        return sum(s.seconds for s in self.stages if name is None or s.name == name)

    @property
    def prompt_tokens(self) -> int:
        return sum(s.prompt_tokens for s in self.stages)

    @property
    def completion_tokens(self) -> int:
        return sum(s.completion_tokens for s in self.stages)

    @property
    def cost_usd(self) -> float:
        return sum(s.cost_usd for s in self.stages)

    @property
    def unpriced_calls(self) -> int:
        """LLM calls whose cost is unknown (no price declared in config and none known to litellm)."""
        return sum(s.unpriced_calls for s in self.stages)

    @property
    def llm_calls(self) -> int:
        return sum(s.calls for s in self.stages)

    def to_dict(self) -> dict[str, Any]:
        return {"stages": [asdict(s) for s in self.stages], "events": list(self.events)}
