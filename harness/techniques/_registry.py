"""One interface for every technique, in the manner of ir_measures' measures.

A technique is a registered class with a `name`, a typed parameter model `Params` (defaults from the
protocol; the configuration section named by `config_section` supplies the run's values) and two entry
points: `run(query)` for one query and `run_many(queries)` for many. Both return `TechniqueResult`s: the
hits, the answer where the technique produces one, and a `Trace` with the calls, tokens, cost and wall
time of every LLM call.

    from harness.techniques import Technique, TechniqueResult, register_technique

    @register_technique
    class FirstWordOnly(Technique):
        name = "first-word-only"
        summary = "dense retrieval of the query's first word (a deliberately weak baseline)"

        def _run(self, query, trace):
            with trace.stage("retrieve"):
                hits = self.services.require("retriever").retrieve(query.text.split()[0], self.params.k)
            return self.result(query, hits, trace)

`build_technique(name, services)` builds one from the configuration; `ragharness techniques` lists them.

This module imports no technique: each registers itself beside its class (`baselines`, `hyde`, `crag`, `fusion`,
`rewrite`, `wsop`, `e2e4`, `ret_mcq`), and the package `harness.techniques` imports those modules, so whoever
imports this registry (which imports its package first) finds every built-in registered.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Iterable, Literal, Mapping, Sequence, TypeVar, Union, overload

from pydantic import BaseModel, ConfigDict, ValidationError

from harness.config import ConfigError, HarnessConfig
from harness.llm.spend import spending_for
from harness.parallel import ordered_map
from harness.progress import progress as stage_progress
from harness.types import Hit, Query, Trace

if TYPE_CHECKING:
    from harness.llm.client import LLMClient
    from harness.retrieval._retriever import Retriever
    from harness.retrieval.embed import Embedder
    from harness.retrieval.rerank import Reranker
    from harness.retrieval.web import WebSearch

ServiceName = Literal["retriever", "embedder", "llm", "reranker", "web"]
Service = Union["Retriever", "Embedder", "LLMClient", "Reranker", "WebSearch"]


class TopK(BaseModel):
    """The parameters of a technique that only retrieves: how many hits it returns."""

    model_config = ConfigDict(extra="forbid")
    k: int = 10


@dataclass
class TechniqueResult:
    """What one query produced: hits best first, the answer (None for retrieval-only techniques) and the trace."""

    query_id: str
    query: str
    hits: list[Hit]
    answer: str | None = None
    trace: Trace = field(default_factory=Trace)
    technique: str = ""
    detail: dict[str, Any] = field(default_factory=dict)

    @property
    def ids(self) -> list[str]:
        return [h.id for h in self.hits]

    @property
    def fell_back(self) -> bool:
        """The technique could not do its own work and fell back (e.g. HyDE to the raw query)."""
        return any(e["name"].endswith("_fallback") for e in self.trace.events)

    @property
    def errors(self) -> int:
        """LLM or service errors the technique absorbed on this query (counted, never hidden)."""
        return sum(e["name"].endswith("_error") for e in self.trace.events)


@dataclass
class Arm:
    """One technique's results over a query set, as the comparisons read them."""

    technique: str
    model: str | None
    results: list[TechniqueResult]

    @property
    def runs(self) -> dict[str, list[str]]:
        return {r.query_id: r.ids for r in self.results}

    @property
    def scored_run(self) -> dict[str, dict[str, float]]:
        """{query id: {doc id: score}} with scores strictly decreasing by rank (for a TREC run file)."""
        return {r.query_id: {d: float(len(r.ids) - i) for i, d in enumerate(r.ids)} for r in self.results}

    @property
    def failures(self) -> dict[str, set[str]]:
        """Queries on which the technique fell back (e.g. HyDE to the raw query) or absorbed an error."""
        return {"fallback": {r.query_id for r in self.results if r.fell_back},
                "error": {r.query_id for r in self.results if r.errors}}


class LazyArm:
    """A technique's results drawn on demand in query order: `upto(n)` runs only the queries not yet run, so
    claims that decide early (harness.stats.sequential) stop the technique's spending, and claims sharing the
    arm share its generations."""

    def __init__(self, technique: "Technique", queries: Iterable[Query | str]):
        self.technique = technique
        self.queries = list(queries)
        self._results: list[TechniqueResult] = []
        self._lock = threading.Lock()

    @property
    def available(self) -> int:
        return len(self.queries)

    @property
    def drawn(self) -> int:
        """Queries run so far (by any claim)."""
        return len(self._results)

    def upto(self, n: int) -> Arm:
        """The arm over the first `n` queries (all of them when n exceeds the set)."""
        n = min(n, len(self.queries))
        with self._lock:
            if n > len(self._results):
                self._results += self.technique.run_many(self.queries[len(self._results):n])
            return Arm(self.technique.name, self.technique.model, self._results[:n])

    def all(self) -> Arm:
        return self.upto(len(self.queries))


@dataclass
class Services:
    """The parts techniques are built on. Values may be given directly or as zero-argument factories in
    `factories` (the pytest fixtures pass factories, so the LLM server starts only for a technique that needs it).
    `llm_for(model)` builds a client for another model (a technique's own `llm` setting)."""

    config: HarnessConfig = field(default_factory=HarnessConfig)
    retriever: Retriever | None = None
    embedder: Embedder | None = None
    llm: LLMClient | None = None
    reranker: Reranker | None = None
    web: WebSearch | None = None
    factories: dict[str, Callable[[], Service]] = field(default_factory=dict)
    llm_for: Callable[[str], LLMClient] | None = None

    def __post_init__(self) -> None:
        url = self.config.harness.web_search_url
        if url:  # the configured SearXNG instance is the web, unless a factory for it was given
            from harness.retrieval.web import SearxngWebSearch

            self.factories = {"web": lambda: SearxngWebSearch(url), **self.factories}

    @overload
    def require(self, name: Literal["retriever"]) -> Retriever: ...
    @overload
    def require(self, name: Literal["embedder"]) -> Embedder: ...
    @overload
    def require(self, name: Literal["llm"]) -> LLMClient: ...
    @overload
    def require(self, name: Literal["reranker"]) -> Reranker: ...
    @overload
    def require(self, name: Literal["web"]) -> WebSearch: ...

    def require(self, name: ServiceName) -> Service:
        """The service `name`, built by its factory on first use; a LookupError when there is neither."""
        value: Service | None = getattr(self, name, None)
        if value is None and name in self.factories:
            value = self.factories[name]()
            setattr(self, name, value)
        if value is None:
            raise LookupError(f"this technique needs the service {name!r}; pass Services({name}=...)")
        return value


class Technique:
    """Base class of every technique; subclasses set `name`, `summary`, `Params` and implement `_run`."""

    name: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    Params: ClassVar[type[BaseModel]] = TopK
    config_section: ClassVar[str | None] = None  # dotted path in HarnessConfig, e.g. "wsop.hyde"
    role: ClassVar[str | None] = None  # the claims this technique answers for by default (e.g. "hyde")

    # an instance of `Params` (a subclass narrows the type to its own Params)
    params: BaseModel

    def __init__(self, services: Services, params: BaseModel | None = None):
        self.services = services
        self.params = params if params is not None else self.Params()
        self.setup()

    def setup(self) -> None:
        """Build the underlying implementation (called once, after `services` and `params` are set)."""

    @property
    def label(self) -> str:
        """The name the report shows."""
        return self.name

    @property
    def model(self) -> str | None:
        """The label of the LLM this technique calls, None when it has called for none."""
        return getattr(self.services.llm, "label", None)

    def arm(self, queries: Iterable[Query | str], *, concurrency: int | None = None,
            progress: Callable[[int, int], None] | None = None) -> Arm:
        """`run_many` as an Arm (results with the technique's name and model)."""
        results = self.run_many(queries, concurrency=concurrency, progress=progress)
        return Arm(self.name, self.model, results)

    def lazy_arm(self, queries: Iterable[Query | str]) -> LazyArm:
        """The technique over `queries`, run only as far as a claim asks (`LazyArm.upto`)."""
        return LazyArm(self, queries)

    def run(self, query: Query | str, trace: Trace | None = None) -> TechniqueResult:
        q = query if isinstance(query, Query) else Query(id=str(query), text=str(query))
        with spending_for(self.name):
            res = self._run(q, trace if trace is not None else Trace())
        res.technique = res.technique or self.name
        return res

    def run_many(self, queries: Iterable[Query | str], *, concurrency: int | None = None,
                 progress: Callable[[int, int], None] | None = None) -> list[TechniqueResult]:
        """Every query, results in input order. `concurrency` queries run at once (default: the LLM client's
        bound, `harness.llm.concurrency`; 1 for a technique without an LLM); the client's own limit still caps
        the calls in flight."""
        qs = list(queries)
        if concurrency is None:
            concurrency = getattr(self.services.llm, "concurrency", 1) or 1
        done, lock = [0], threading.Lock()
        bar = stage_progress(self.label, len(qs))

        def one(q: Query | str) -> TechniqueResult:
            res = self.run(q)
            with lock:  # queries finish in any order under concurrency; the count stays exact
                done[0] += 1
                if progress is not None:
                    progress(done[0], len(qs))
            bar.advance()
            return res

        try:
            return ordered_map(one, qs, concurrency)
        finally:
            bar.close()

    def _run(self, query: Query, trace: Trace) -> TechniqueResult:
        raise NotImplementedError

    def result(self, query: Query, hits: Sequence[Hit], trace: Trace, answer: str | None = None,
               **detail: Any) -> TechniqueResult:
        return TechniqueResult(query.id, query.text, list(hits), answer, trace, self.name, dict(detail))


TECHNIQUES: dict[str, type[Technique]] = {}
T = TypeVar("T", bound="type[Technique]")


@overload
def register_technique(cls: T, *, replace: bool = False) -> T: ...
@overload
def register_technique(cls: None = None, *, replace: bool = False) -> Callable[[T], T]: ...


def register_technique(cls: T | None = None, *, replace: bool = False) -> T | Callable[[T], T]:
    """Class decorator: register a technique under its `name` (`replace=True` to override a built-in)."""

    def deco(c: T) -> T:
        if not c.name:
            raise ValueError(f"{c.__qualname__} has no `name`")
        if c.name in TECHNIQUES and TECHNIQUES[c.name] is not c and not replace:
            raise ValueError(f"a technique named {c.name!r} is already registered; pass replace=True to override it")
        TECHNIQUES[c.name] = c
        return c

    return deco(cls) if cls is not None else deco


def technique_names() -> list[str]:
    return sorted(TECHNIQUES)


def get_technique(name: str) -> type[Technique]:
    try:
        return TECHNIQUES[name]
    except KeyError:
        raise KeyError(f"no technique named {name!r}; registered: {', '.join(sorted(TECHNIQUES))}") from None


def config_values(config: HarnessConfig, section: str | None) -> dict[str, Any]:
    """The configuration section's values (a dict), or {} when the technique has none."""
    if not section:
        return {}
    node: Any = config
    for part in section.split("."):
        node = getattr(node, part)
    return node.model_dump() if isinstance(node, BaseModel) else dict(node)


def technique_params(name: str, config: HarnessConfig | None = None, overrides: Mapping[str, object] | None = None, *,
                     source: str | None = None) -> BaseModel:
    """The technique's parameters: its Params defaults, then its configuration section, then `overrides`.
    An invalid value is a ConfigError naming the source (file) and the field."""
    cls = get_technique(name)
    values = {k: v for k, v in config_values(config or HarnessConfig(), cls.config_section).items()
              if k in cls.Params.model_fields}
    values.update(overrides or {})
    try:
        return cls.Params.model_validate(values)
    except ValidationError as exc:
        first = exc.errors()[0]
        prefix = f"{cls.config_section}." if cls.config_section else f"{name}."
        fld = prefix + ".".join(str(x) for x in first["loc"])
        raise ConfigError(f"{source or f'parameters of technique {name!r}'}: field '{fld}': {first['msg']}") from None


def build_technique(name: str, services: Services, params: Mapping[str, object] | BaseModel | None = None, *,
                    source: str | None = None) -> Technique:
    """Build the technique registered as `name`, with parameters from `services.config` and `params`."""
    cls = get_technique(name)
    if not isinstance(params, BaseModel):
        params = technique_params(name, services.config, params, source=source)
    return cls(services, params)


def describe_params(name: str) -> list[dict[str, Any]]:
    """One row per parameter: name, type, default (what `ragharness techniques` prints)."""
    cls = get_technique(name)
    rows = []
    for pname, f in cls.Params.model_fields.items():
        ann = getattr(f.annotation, "__name__", None) or str(f.annotation).replace("typing.", "")
        default = f.get_default(call_default_factory=True)
        if isinstance(default, BaseModel):
            default = "{...}"
        rows.append({"name": pname, "type": ann, "default": default})
    return rows
