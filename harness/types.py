"""Core value types shared by every layer: documents, chunks, queries, hits, rankings and traces."""
from __future__ import annotations

import threading
import time
from contextlib import contextmanager
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


@dataclass
class Trace:
    """What a technique did: stages with timings/tokens/cost, and named events (which branch ran).

    Tests assert on traces (e.g. WSOP-001 reads `trace.called("hyde")`), never on mocks.
    """

    stages: list[Stage] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    # open stages per thread: a call made in a worker thread is charged to that thread's innermost stage
    _open: dict[int, list[Stage]] = field(default_factory=dict, repr=False)
    _lock: Any = field(default_factory=threading.Lock, repr=False, compare=False)

    def _stack(self) -> list[Stage]:
        return self._open.setdefault(threading.get_ident(), [])

    @contextmanager
    def stage(self, name: str, **detail: Any) -> Iterator[Stage]:
        """Time a block as a stage; LLM calls inside it (from this thread) are charged to it."""
        st = Stage(name=name, detail=dict(detail))
        stack = self._stack()
        stack.append(st)
        t0 = time.perf_counter()
        try:
            yield st
        finally:
            st.seconds = time.perf_counter() - t0
            stack.pop()
            with self._lock:
                self.stages.append(st)
            self.event(name, kind="stage")

    def record_llm_call(self, prompt_tokens: int, completion_tokens: int, cost_usd: float | None,
                        seconds: float = 0.0) -> None:
        """Charge one LLM call to this thread's innermost open stage; outside any stage it becomes an `llm`
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
