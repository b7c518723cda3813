"""The technique registry: every built-in registered with typed parameters, one result type from one and many
queries, parameter errors naming file and field, user techniques, and WSOP composing CRAG's correction."""
from __future__ import annotations

import pytest

from harness.cli import main
from harness.config import ConfigError, HarnessConfig, load_config
from harness.techniques._registry import (
    Technique, TechniqueResult, TopK, build_technique, get_technique, register_technique, technique_names,
    technique_params,
)
from harness.types import Query

from tests.technique_kit import make_services

pytestmark = pytest.mark.unit
BUILTINS = {"dense", "bm25", "hybrid", "hyde", "crag", "rag-fusion", "query-rewriting", "wsop", "e2-standard",
            "e3-filtered", "e4-reasoning", "ret"}
USES_LLM = BUILTINS - {"dense", "bm25", "hybrid"}
QUERIES = [Query("q1", "why does a wing stall at high angle of attack"),
           Query("q2", "how are refunds paid for gift card purchases")]


def test_every_builtin_is_registered_with_typed_params():
    assert BUILTINS <= set(technique_names())
    for name in BUILTINS:
        cls = get_technique(name)
        assert cls.summary and cls.Params.model_fields, name


@pytest.mark.parametrize("name", sorted(BUILTINS))
def test_one_result_type_for_one_and_many_queries(name, tmp_path):
    overrides = {"enable_ret": True} if name == "ret" else {}
    services, rec = make_services(tmp_path, name=f"reg-{name}")
    tech = build_technique(name, services, overrides)
    one = tech.run(QUERIES[0])
    many = tech.run_many(QUERIES, concurrency=2)
    assert isinstance(one, TechniqueResult) and one.technique == name and one.hits
    assert [r.query_id for r in many] == ["q1", "q2"]  # input order kept under concurrency
    assert many[0].ids == one.ids, "a deterministic model gives the same hits one query at a time and many at once"
    if name in USES_LLM:
        assert one.trace.llm_calls > 0 and one.trace.prompt_tokens > 0 and rec.calls, one.trace.events
    else:
        assert one.trace.llm_calls == 0 and not rec.calls
    if name in {"crag", "wsop", "e2-standard", "e3-filtered", "e4-reasoning"}:
        assert one.answer


def test_param_error_names_the_file_and_field():
    with pytest.raises(ConfigError, match=r"wsop\.yaml: field 'wsop\.hyde\.temperature'"):
        technique_params("hyde", HarnessConfig(), {"temperature": "hot"}, source="wsop.yaml")
    with pytest.raises(ConfigError, match=r"field 'wsop\.hyde\.bogus'"):
        technique_params("hyde", HarnessConfig(), {"bogus": 1}, source="wsop.yaml")


def test_config_file_values_reach_the_technique(tmp_path):
    cfg = tmp_path / "wsop.yaml"
    cfg.write_text("wsop:\n  rag_fusion:\n    num_queries: 2\n    rrf_k: 5\n", encoding="utf-8")
    params = technique_params("rag-fusion", load_config(cfg))
    assert (params.num_queries, params.rrf_k, params.top_k_per_query) == (2, 5, 10)


def test_removed_protocol_fields_are_errors_naming_file_and_field(tmp_path):
    cfg = tmp_path / "wsop.yaml"
    cfg.write_text("wsop:\n  crag:\n    evaluator_model: reranker\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"wsop\.yaml:3: field 'wsop\.crag\.evaluator_model' is not read"):
        load_config(cfg)
    cfg.write_text("wsop:\n  crag:\n    evaluatr: x\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"wsop\.yaml:3: field 'wsop\.crag\.evaluatr'"):
        load_config(cfg)


def test_user_technique_registers_and_builds(tmp_path):
    @register_technique
    class FirstWord(Technique):
        name = "test-first-word"
        summary = "dense retrieval of the first word"
        Params = TopK

        def _run(self, query, trace):
            with trace.stage("retrieve"):
                hits = self.services.require("retriever").retrieve(query.text.split()[0], self.params.k)
            return self.result(query, hits, trace)

    services, _ = make_services(tmp_path, name="reg-user")
    res = build_technique("test-first-word", services, {"k": 3}).run("wing stall")
    assert res.technique == "test-first-word" and len(res.hits) == 3
    with pytest.raises(ValueError, match="already registered"):
        register_technique(type("Clash", (Technique,), {"name": "hyde", "summary": "x"}))


def test_cli_lists_every_technique_with_parameters(capsys):
    assert main(["techniques"]) == 0
    out = capsys.readouterr().out
    for name in BUILTINS:
        assert f"\n{name}: " in f"\n{out}"
    assert "num_documents" in out and "mcq_fingerprint_weight" in out and "[config: wsop.hyde]" in out


def test_cli_shows_the_config_files_values(tmp_path, capsys):
    cfg = tmp_path / "wsop.yaml"
    cfg.write_text("wsop:\n  hyde:\n    num_documents: 7\n", encoding="utf-8")
    assert main(["techniques", "--config", str(cfg)]) == 0
    hyde = capsys.readouterr().out.split("\nhyde: ")[1].split("\n\n")[0]
    assert "num_documents" in hyde and " 7" in hyde


@pytest.mark.parametrize("route", ["moderate", "complex"])
@pytest.mark.parametrize("score, corpus, web", [(0.9, True, False), (0.5, True, True), (0.1, False, True)])
def test_wsop_applies_crags_correction_on_every_route(route, score, corpus, web, tmp_path):
    """CORRECT keeps the corpus, AMBIGUOUS adds the web, INCORRECT replaces the corpus with the web, on both
    routes that evaluate retrieval (CRAG's semantics, not a second implementation)."""
    services, _ = make_services(tmp_path, score=score, name=f"reg-wsop-{route}-{score}")
    res = build_technique("wsop", services, {"complexity": route}).run(QUERIES[0])
    sources = {h.metadata["source"] for h in res.hits}
    assert ("corpus" in sources, "web" in sources) == (corpus, web), sources


def test_trace_charges_each_threads_calls_to_its_own_stage():
    from concurrent.futures import ThreadPoolExecutor

    from harness.types import Trace

    trace = Trace()

    def work(i: int) -> None:
        with trace.stage(f"s{i}"):
            for _ in range(50):
                trace.record_llm_call(i, 1, 0.001)

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(work, range(8)))
    by_name = {s.name: s for s in trace.stages}
    assert all(by_name[f"s{i}"].calls == 50 and by_name[f"s{i}"].prompt_tokens == 50 * i for i in range(8))
    assert trace.llm_calls == 400 and len(trace.events) == 8


def test_a_configured_web_search_url_is_the_web_unless_one_is_given():
    from harness.config import load_config
    from harness.techniques.crag import SearxngWebSearch
    from harness.techniques._registry import Services

    cfg = load_config(**{"harness.web_search_url": "http://127.0.0.1:8888"})
    web = Services(cfg).require("web")
    assert isinstance(web, SearxngWebSearch) and web.base_url == "http://127.0.0.1:8888"
    mine = object()
    assert Services(cfg, factories={"web": lambda: mine}).require("web") is mine
    assert Services(cfg, web=mine).require("web") is mine
    with pytest.raises(LookupError, match="needs the service 'web'"):
        Services().require("web")
