"""No configuration field is unread: every technique field of `wsop.yaml` is changed in turn and the technique's
behaviour or trace shows it; every `harness.*` field is read by the code that uses it."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Callable

import pytest

from harness.config import ConfigError, HarnessConfig, leaf_fields, load_config
from harness.llm.cache import ResponseCache
from harness.techniques._registry import build_technique
from harness.types import Query

from tests.technique_kit import make_services

pytestmark = pytest.mark.unit
ROOT = Path(__file__).resolve().parents[1]
Q = Query("q1", "why does a wing stall at high angle of attack")
COMPLEX = Query("q2", "Compare the causes of wing stall at low and high Reynolds number, and explain how boundary "
                      "layer separation and the angle of attack interact with wing sweep and thickness.")


def _run(name: str, config: HarnessConfig, tmp: Path, *, score: float = 0.9, query: Query = Q, **params: Any):
    services, rec = make_services(tmp, config, score=score, name=f"cf-{tmp.name}")
    return build_technique(name, services, params).run(query), rec


def _params(rec, needle: str) -> list[dict]:
    return [p for text, p in rec.calls if needle in text]


def _events(res) -> list[str]:
    return sorted({e["name"] for e in res.trace.events})


def hyde_llm(c, tmp):
    from harness.llm.client import LLMClient
    from harness.llm.scripted import register

    services, _ = make_services(tmp, c, name="cf-hyde-llm")
    services.llm_for = lambda model: LLMClient(register("cf-other", lambda m, p: "a passage"), label=model)
    return build_technique("hyde", services).hyde.llm.label


def hyde_cache(c, tmp):
    services, _ = make_services(tmp, c, name="cf-hyde-cache", llm_cache=ResponseCache(tmp / "llm"))
    tech = build_technique("hyde", services)
    tech.run(Q)
    return tech.run(Q).trace.called("hyde_cache_hit")


def rewrite_model(c, tmp):
    try:
        return _run("query-rewriting", c, tmp)[0].detail["rewritten"]
    except ValueError as exc:  # a path that holds no checkpoint: the field was read and tried
        return f"error: {exc}"


def mcq_weight(c, tmp):
    services, _ = make_services(tmp, c, name="cf-mcq")
    tech = build_technique("ret", services, {"enable_ret": True})
    res = tech.run(Query("r", "how many days to return electronics after delivery"))
    return tech.score_options(res, ["14 days", "30 days", "60 days", "90 days"], 1)


def version(c, tmp):
    try:
        return load_config(None, **{"wsop.version": c.wsop.version}).wsop.version
    except ConfigError as exc:
        return f"error: {exc}"


def wsop(route: str, observe: Callable, *, score: float = 0.9, query: Query = Q):
    return lambda c, tmp: observe(_run("wsop", c, tmp, score=score, query=query, complexity=route)[0])


# field -> (changed value, observation of the technique built from a configuration holding it)
PROBES: dict[str, tuple[Any, Callable[[HarnessConfig, Path], Any]]] = {
    "wsop.version": ("1.0.0", version),
    "wsop.hyde.enabled": (False, wsop("moderate", _events)),
    "wsop.hyde.llm": ("scripted/cf-other", hyde_llm),
    "wsop.hyde.temperature": (0.1, lambda c, t: _params(_run("hyde", c, t)[1], "passage")),
    "wsop.hyde.max_tokens": (17, lambda c, t: _params(_run("hyde", c, t)[1], "passage")),
    "wsop.hyde.num_documents": (3, lambda c, t: len(_run("hyde", c, t)[0].detail["hypothetical_documents"])),
    "wsop.hyde.include_query": (False, lambda c, t: [round(h.score, 6) for h in _run("hyde", c, t)[0].hits]),
    "wsop.hyde.cache_ttl": (0, hyde_cache),
    "wsop.crag.enabled": (False, wsop("moderate", _events)),
    "wsop.crag.scorer": ("llm", lambda c, t: len(_params(_run("crag", c, t, generate=False)[1], "relevant"))),
    "wsop.crag.upper_threshold": (0.4, lambda c, t: _run("crag", c, t, score=0.5, generate=False)[0].detail["action"]),
    "wsop.crag.lower_threshold": (0.6, lambda c, t: _run("crag", c, t, score=0.5, generate=False)[0].detail["action"]),
    "wsop.crag.strip_threshold": (0.95, lambda c, t: _run("crag", c, t, generate=False)[0].detail["context"]),
    "wsop.rag_fusion.enabled": (False, wsop("complex", _events)),
    "wsop.rag_fusion.num_queries": (2, lambda c, t: _run("rag-fusion", c, t)[0].detail["queries"]),
    "wsop.rag_fusion.rrf_k": (1, lambda c, t: [round(h.score, 6) for h in _run("rag-fusion", c, t)[0].hits]),
    "wsop.rag_fusion.top_k_per_query": (2, lambda c, t: len(_run("rag-fusion", c, t)[0].hits)),
    "wsop.rag_fusion.final_top_k": (2, wsop("complex", lambda r: len(r.hits))),
    "wsop.rag_fusion.temperature": (0.2, lambda c, t: _params(_run("rag-fusion", c, t)[1], "Generate")),
    "wsop.rag_fusion.max_tokens": (33, lambda c, t: _params(_run("rag-fusion", c, t)[1], "Generate")),
    "wsop.query_rewriting.enabled": (False, wsop("complex", _events)),
    "wsop.query_rewriting.model": ("/nonexistent/t5-checkpoint", rewrite_model),
    "wsop.query_rewriting.max_length": (9, lambda c, t: _params(_run("query-rewriting", c, t)[1], "Rewrite")),
    "wsop.routing.auto_classify": (False, wsop("auto", lambda r: r.detail["complexity"], query=COMPLEX)),
    "wsop.routing.simple_threshold": (0.99, wsop("auto", lambda r: r.detail["complexity"], query=COMPLEX)),
    "wsop.routing.complex_threshold": (0.99, wsop("auto", lambda r: r.detail["complexity"], query=COMPLEX)),
    "wsop.fallback.web_search_on_incorrect": (False, wsop("moderate", lambda r: len(r.hits), score=0.1)),
    "wsop.fallback.max_web_results": (2, wsop("moderate", lambda r: len(r.hits), score=0.1)),
    "wsop.fallback.ambiguous_web_results": (2, wsop("moderate", lambda r: len(r.hits), score=0.5)),
    "ret.enable_ret": (True, lambda c, t: _run("ret", c, t)[0].detail["skip_reason"]),
    "ret.n_hypotheses": (5, lambda c, t: [x for x, _ in _run("ret", c, t, enable_ret=True)[1].calls
                                          if "candidate answers" in x]),
    "ret.fingerprints_per_hypothesis": (2, lambda c, t: [x for x, _ in _run("ret", c, t, enable_ret=True)[1].calls
                                                        if "atomic facts" in x]),
    "ret.max_fingerprint_queries": (1, lambda c, t: _run("ret", c, t, enable_ret=True)[0].detail["ret"].plan),
    "ret.coverage_weight": (0.9, lambda c, t: [round(h.score, 6) for h in _run("ret", c, t, enable_ret=True)[0].hits]),
    "ret.mcq_fingerprint_weight": (0.0, mcq_weight),
    "ret.max_cost_usd": (0.0, lambda c, t: _run("ret", c, t, enable_ret=True)[0].detail["skip_reason"]),
    "ret.min_justification_tokens": (500, lambda c, t: _run("ret", c, t, enable_ret=True)[0].detail["skip_reason"]),
    "ret.prompt_variant": ("completion", lambda c, t: [x for x, _ in _run("ret", c, t, enable_ret=True)[1].calls]),
    "ret.table_max_tokens": (12, lambda c, t: _run("ret", c, t, enable_ret=True)[0].detail["table"]),
}


def _set(config: HarnessConfig, dotted: str, value: Any) -> HarnessConfig:
    data = config.model_dump()
    node = data
    *parents, last = dotted.split(".")
    for p in parents:
        node = node[p]
    node[last] = value
    if dotted == "wsop.version":
        return config  # an unsupported version never validates: the probe loads it itself
    return HarnessConfig.model_validate(data)


def test_every_technique_field_has_a_probe():
    technique_fields = {f for f in leaf_fields() if f.startswith(("wsop.", "ret."))}
    assert technique_fields == set(PROBES), "a field with no probe is a field nobody showed is read"


@pytest.mark.parametrize("field", sorted(PROBES))
def test_changing_the_field_changes_the_technique(field, tmp_path):
    base = load_config(ROOT / "wsop.yaml")
    base.harness.cache_dir = tmp_path / "cache"
    value, observe = PROBES[field]
    changed = _set(base, field, value) if field != "wsop.version" else base.model_copy(
        update={"wsop": base.wsop.model_copy(update={"version": value})})
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    before, after = observe(base, tmp_path / "a"), observe(changed, tmp_path / "b")
    assert before != after, f"{field}: {before!r} == {after!r}"


READ_AS = {"harness.llm.prices": "price_for"}  # a field read through its accessor


def test_every_harness_field_is_read_by_the_code():
    """harness.* settings (paths, models, LLM client settings) are read where they are used: each appears as an
    attribute access in the library or the benchmark fixtures, not only in its declaration."""
    sources = "\n".join(p.read_text(encoding="utf-8") for d in ("harness", "benchmarks")
                        for p in (ROOT / d).rglob("*.py") if p.name != "config.py")
    for f in leaf_fields():
        if f.startswith("harness."):
            attr = READ_AS.get(f, f.rsplit(".", 1)[1])
            assert re.search(rf"\.{attr}\b", sources), f"{f} is never read"


@pytest.mark.parametrize("max_queries, n, expected", [(30, 400, 30), (30, 12, 12), (0, 400, 400), (1, 400, 1)])
def test_max_queries_caps_a_study(max_queries, n, expected):
    """--max-queries caps every study's size (the judge's agreement items too); 0 means no cap."""
    h = load_config(**{"harness.max_queries": max_queries}).harness
    assert h.capped(n) == expected
