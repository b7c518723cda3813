"""The plugin's model fixtures: LLMs and judges, techniques, and record/replay of LLM traffic (cassettes); heavy
imports happen inside, so `pytest -m unit` stays light."""
from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator

import pytest

from harness.plugin.cassette_body import same_body
from harness.plugin.state import estimating, spend_of
from harness.config import HarnessConfig

__all__ = ["rag_judges", "rag_llm", "rag_local_llm_server", "rag_scripted_llm", "rag_recorded_llm", "rag_technique_services",
           "rag_make_technique"]

SECRET_HEADERS = ("authorization", "api-key", "x-api-key", "openai-api-key", "anthropic-api-key", "x-goog-api-key",
                  "cookie", "set-cookie", "proxy-authorization")
SECRET_PARAMS = ("key", "api_key", "apikey", "access_token", "token")
REPLAY_API_BASE = "http://127.0.0.1:8765/v1"


# ---------------------------------------------------------------- LLMs
@pytest.fixture(scope="session")
def rag_local_llm_server(request: pytest.FixtureRequest, rag_config: HarnessConfig) -> Iterator[Any]:
    """Start the embedded local model on a free loopback port for the session (local/* models only)."""

    model = rag_config.harness.llm.model
    if not model.startswith("local/") or estimating(request.config):  # a cost estimate calls no model
        yield None
        return
    with _local_server(rag_config) as server:
        yield server


@contextlib.contextmanager
def _local_server(rag_config: HarnessConfig) -> Iterator[Any]:
    """The run's local/* model served by llama.cpp on a free loopback port, its log in the report directory."""
    from harness.llm._litellm import close_clients
    from harness.llm.local import LocalModelServer

    h = rag_config.harness
    log = h.report_dir / "llama_server.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    with LocalModelServer(h.llm.model.split("/", 1)[1], log_path=log, parallel=h.llm.local_parallel,
                          n_threads=h.llm.local_threads) as server:
        try:
            yield server
        finally:
            close_clients()  # no connection to the server outlives it


@pytest.fixture(scope="session")
def rag_llm(pytestconfig: pytest.Config, rag_config: HarnessConfig, rag_local_llm_server):
    """The LLM for the benchmark tier: `--llm MODEL` (any litellm string) or the embedded local model; under
    `--estimate-cost` a stand-in for it that counts tokens and calls nothing."""
    s = rag_config.harness.llm
    cache = _response_cache(rag_config)
    from harness import provenance

    if estimating(pytestconfig):
        provenance.note_model(s.model, traffic="none (cost estimate)", role="llm")
        return _client(pytestconfig, rag_config, s.model, cache=None)
    traffic = "live+cache" if cache is not None else "live"
    if rag_local_llm_server is not None:
        provenance.note_model(s.model, traffic=traffic, role="llm", served="local llama.cpp server")
        return _client(pytestconfig, rag_config, s.model, model=rag_local_llm_server.litellm_model, cache=cache,
                       api_base=rag_local_llm_server.api_base, api_key="sk-local")
    provenance.note_model(s.model, traffic=traffic, role="llm")
    return _client(pytestconfig, rag_config, s.model, cache=cache)


@contextlib.contextmanager
def pace_client(config: pytest.Config) -> Iterator[Any]:
    """The run's LLM outside any fixture, uncached, its calls counted as role "pace-probe" (the budget's pace probe,
    `harness.plugin.budget`): the embedded local model gets a server of its own, stopped on exit."""
    from harness.plugin.state import harness_config_of

    rag_config = harness_config_of(config)
    h = rag_config.harness
    if not h.llm.model.startswith("local/"):
        yield _client(config, rag_config, h.llm.model, cache=None).with_role("pace-probe")
        return
    with _local_server(rag_config) as server:
        yield _client(config, rag_config, h.llm.model, model=server.litellm_model, cache=None,
                      api_base=server.api_base, api_key="sk-local").with_role("pace-probe")


def _response_cache(harness_config: HarnessConfig) -> Any:
    """The run's LLM response cache (under the cache dir), or None when `harness.llm.cache` is off."""
    from harness.llm.cache import ResponseCache

    h = harness_config.harness
    return ResponseCache(h.cache_dir / "llm") if h.llm.cache else None


def _client(pytestconfig: pytest.Config, harness_config: HarnessConfig, label: str, **kw: Any) -> Any:
    """A client for the model `label` with the run's LLM settings, recording into the session's spend (and held
    to its cap); under `--estimate-cost` the stand-in that counts instead of calling."""
    from harness.llm.client import LLMClient

    s = harness_config.harness.llm
    spend = spend_of(pytestconfig)
    if estimating(pytestconfig):
        from harness.llm.estimate import EstimatingClient, stand_in_responder

        return EstimatingClient(label, stand_in_responder(), spend=spend, price=s.price_for(label),
                                concurrency=s.concurrency_for(label))
    try:
        return LLMClient.from_settings(s, label, spend=spend, **kw)
    except ValueError as exc:  # --max-cost on a model with no price
        raise pytest.UsageError(f"rag-harness: {exc}") from None


@pytest.fixture(scope="session")
def rag_judges(request: pytest.FixtureRequest, pytestconfig: pytest.Config, rag_config: HarnessConfig) -> list[Any]:
    """The LLM judges of answer-level metrics (`--judge MODEL`, repeatable; default the run's LLM), each a
    `harness.judge.LLMJudge` over a client whose calls count as role "judge" (apart from the pipeline's spend)
    and go through the response cache. A local/* judge other than the run's LLM gets its own llama.cpp server."""
    from harness import provenance
    from harness.judge import LLMJudge

    h = rag_config.harness
    models = list(dict.fromkeys(h.judge.models)) or [h.llm.model]
    cache = _response_cache(rag_config)
    out = []
    for model in models:
        if model == h.llm.model:
            client = request.getfixturevalue("rag_llm")
        elif model.startswith("local/") and not estimating(pytestconfig):
            from harness.llm.local import LocalModelServer

            server = LocalModelServer(model.split("/", 1)[1], log_path=h.report_dir / "llama_server_judge.log",
                                      parallel=h.llm.local_parallel, n_threads=h.llm.local_threads).start()
            request.addfinalizer(server.stop)
            client = _client(pytestconfig, rag_config, model, model=server.litellm_model, cache=cache,
                             api_base=server.api_base, api_key="sk-local")
        else:
            client = _client(pytestconfig, rag_config, model, cache=cache)
        provenance.note_model(model, traffic="live+cache" if cache is not None else "live", role="judge")
        out.append(LLMJudge(client.with_role("judge"), temperature=h.judge.temperature, seed=h.judge.seed,
                            recheck_temperature=h.judge.recheck_temperature, recheck_prompt=h.judge.recheck_prompt))
    return out


@pytest.fixture
def rag_scripted_llm() -> Callable[..., Any]:
    """`scripted_llm(table_or_function, name=...)` -> an LLMClient over a deterministic scripted model."""
    from harness.llm.client import LLMClient
    from harness.llm.scripted import by_kind, register

    def _make(responder, name: str = "default", **kw: Any):
        from harness import provenance

        fn = by_kind(responder) if isinstance(responder, dict) else responder
        provenance.note_model(f"scripted/{name}", traffic="scripted", role="llm")
        return LLMClient(register(name, fn), **kw)

    return _make


# ---------------------------------------------------------------- techniques
@pytest.fixture(scope="session")
def rag_technique_services(request: pytest.FixtureRequest, rag_config: HarnessConfig):
    """The configured services for building techniques, each made on first use (the LLM server starts only
    for a technique that calls the LLM). Benchmarks override `retriever`/`web` for their dataset."""
    from harness.techniques._registry import Services

    def lazy(name: str) -> Callable[[], Any]:
        return lambda: request.getfixturevalue(name)

    return Services(rag_config, factories={"llm": lazy("rag_llm"), "embedder": lazy("rag_embedder"),
                                               "reranker": lazy("rag_reranker")},
                    llm_for=lambda model: _llm_for(request.config, rag_config, model))


def _llm_for(pytestconfig: pytest.Config, harness_config: HarnessConfig, model: str) -> Any:
    """A client for a technique's own model setting (e.g. `wsop.hyde.llm`), with the run's LLM settings."""
    from harness import provenance

    provenance.note_model(model, traffic="none (cost estimate)" if estimating(pytestconfig) else "live",
                          role="technique llm")
    return _client(pytestconfig, harness_config, model, cache=_response_cache(harness_config))


@pytest.fixture(scope="session")
def rag_make_technique(pytestconfig: pytest.Config, rag_technique_services) -> Callable[..., Any]:
    """`make_technique(role, services=None, **params)` -> the technique that answers for `role` (a built-in
    name such as "hyde", or the technique `--technique role=NAME` names), built through the registry with
    the configuration's parameters, then `params`."""
    from harness.techniques._registry import build_technique

    chosen = technique_choices(pytestconfig)

    def _make(role: str, services: Any = None, **params: Any):
        import dataclasses

        name = chosen.get(role, role)
        svc = rag_technique_services if services is None else services
        if services is not None and not services.factories:
            svc = dataclasses.replace(services, factories=rag_technique_services.factories,
                                      llm_for=services.llm_for or rag_technique_services.llm_for)
        from harness import provenance

        tech = build_technique(name, svc, params)
        provenance.note_technique(role, tech.name, tech.label)
        return tech

    return _make


def technique_choices(config: pytest.Config) -> dict[str, str]:
    """`--technique ROLE=NAME` options as {role: name}; an unknown name is a usage error listing the registered."""
    from harness.techniques._registry import technique_names

    out: dict[str, str] = {}
    for opt in config.getoption("technique", default=None) or []:
        role, sep, name = opt.partition("=")
        if not sep or not role or not name:
            raise pytest.UsageError(f"--technique {opt!r}: expected ROLE=NAME, e.g. --technique hyde=my-hyde")
        if name not in technique_names():
            raise pytest.UsageError(f"--technique {opt!r}: no technique named {name!r} is registered "
                                    f"(registered: {', '.join(technique_names())})")
        out[role] = name
    return out


# ---------------------------------------------------------------- record / replay
def configure_vcr(vcr: Any) -> None:
    """Defaults for every cassette: secrets never reach it, and matching ignores host and port so a
    cassette recorded against a local server on any port replays anywhere."""
    vcr.filter_headers = [(h, "REDACTED") for h in SECRET_HEADERS]
    vcr.filter_query_parameters = [(p, "REDACTED") for p in SECRET_PARAMS]
    vcr.before_record_request = scrub_request
    vcr.before_record_response = scrub_response
    vcr.register_matcher("body", same_body)  # vcrpy's, less the diff it writes for every mismatch
    vcr.match_on = ("method", "scheme", "path", "body")
    vcr.decode_compressed_response = True


def scrub_request(request: Any) -> Any:
    """Drop the local server's readiness probe; redact secret headers of everything else."""
    if request.method == "GET" and request.path.endswith("/v1/models"):
        return None
    for h in list(request.headers):
        if h.lower() in SECRET_HEADERS:
            request.headers[h] = "REDACTED"
    return request


def scrub_response(response: dict[str, Any]) -> dict[str, Any]:
    headers = response.get("headers", {})
    for h in list(headers):
        if h.lower() in SECRET_HEADERS:
            headers[h] = ["REDACTED"]
    return response


@pytest.fixture
def rag_recorded_llm(request: pytest.FixtureRequest, rag_config: HarnessConfig):
    """For `@pytest.mark.vcr` tests: replays cassettes of the local model; with `--record-mode` other than
    `none` it starts the local model and records fresh traffic."""
    from harness.llm.client import LLMClient
    from harness.llm.local import LocalModelServer

    from harness import provenance

    mode = request.config.getoption("record_mode", default="none") or "none"
    alias = "smollm2-135m-instruct"
    provenance.note_model(f"local/{alias}", traffic="replayed" if mode == "none" else f"live (recording: {mode})",
                          role="llm")
    if mode == "none":
        return LLMClient(f"openai/{alias}", api_base=REPLAY_API_BASE, api_key="sk-local", label=f"local/{alias}",
                         max_attempts=1, price=rag_config.harness.llm.price_for(f"local/{alias}"))
    server = LocalModelServer(alias).start()
    request.addfinalizer(server.stop)
    return LLMClient(server.litellm_model, api_base=server.api_base, api_key="sk-local", label=f"local/{alias}",
                     max_attempts=1, price=rag_config.harness.llm.price_for(f"local/{alias}"))
