"""Model calls that cannot succeed (unreachable server, unknown model, missing or rejected key) stop the work at
the first one with litellm's error, never waiting on retries; one query's failure (a 500) stays an LLMError the
technique counts; a comparative claim whose arms failed reads `error`."""
from __future__ import annotations

import socket
from pathlib import Path

import numpy as np
import pytest

from harness.llm.client import FatalModelError, LLMClient, LLMError
from harness.llm.simulated import SimulatedAPI

KB = Path(__file__).resolve().parents[1] / "fixtures" / "retail_kb"


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _client(model: str, **kw) -> tuple[LLMClient, list[float]]:
    sleeps: list[float] = []
    return LLMClient(model, sleep=sleeps.append, **kw), sleeps


@pytest.mark.unit
def test_unknown_provider_is_fatal_at_once_with_litellms_error():
    c, sleeps = _client("bogus/not-a-model")
    with pytest.raises(FatalModelError, match="LLM Provider NOT provided") as ei:
        c.complete("hi")
    assert ei.value.kind == "unknown model" and sleeps == [] and c.stats.calls == 1
    assert not isinstance(ei.value, LLMError), "no technique may absorb it as one query's failure"


@pytest.mark.unit
def test_missing_key_is_fatal_at_once(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    c, sleeps = _client("openai/gpt-4o-mini", api_base=f"http://127.0.0.1:{closed_port()}/v1")
    with pytest.raises(FatalModelError, match="(?i)missing credentials") as ei:
        c.complete("hi")
    assert ei.value.kind == "missing key" and sleeps == []


@pytest.mark.unit
def test_unreachable_server_is_fatal_at_once_and_names_the_cause():
    c, sleeps = _client("openai/x", api_base=f"http://127.0.0.1:{closed_port()}/v1", api_key="sk-test")
    with pytest.raises(FatalModelError, match="Connection refused") as ei:
        c.complete("hi")
    assert ei.value.kind == "unreachable" and sleeps == [] and c.stats.calls == 1


@pytest.mark.integration
@pytest.mark.block_network(allowed_hosts=[r"127\.0\.0\.1$"])  # its API is on loopback
def test_rejected_key_is_fatal_and_the_client_starts_no_further_call():
    with SimulatedAPI(lambda m, p: "ok", latency_s=0.0, api_key="sk-right") as api:
        c, sleeps = _client("openai/sim", api_base=api.api_base, api_key="sk-wrong")
        with pytest.raises(FatalModelError, match="Incorrect API key") as ei:
            c.complete("hi")
        assert ei.value.kind == "rejected key" and ei.value.status_code == 401 and sleeps == []
        judge = c.with_role("judge")  # a copy of the client: it knows the model cannot be called
        with pytest.raises(FatalModelError):
            judge.complete("again")
        with pytest.raises(FatalModelError):
            c.complete_many(["a", "b", "c"])
        assert api.log.statuses[401] == 1, "after the first failure no request leaves"
        good, _ = _client("openai/sim", api_base=api.api_base, api_key="sk-right")
        assert good.complete("hi").text == "ok"


@pytest.mark.integration
@pytest.mark.block_network(allowed_hosts=[r"127\.0\.0\.1$"])  # its API is on loopback
def test_a_server_that_answered_and_went_away_is_retried_then_fatal():
    with SimulatedAPI(lambda m, p: "ok", latency_s=0.0) as api:
        c, sleeps = _client("openai/sim", api_base=api.api_base, api_key="sk-test")
        assert c.complete("first").text == "ok"
    c.api_base = f"http://127.0.0.1:{closed_port()}/v1"  # where the server was: nothing listens any more
    with pytest.raises(FatalModelError, match="cannot be reached"):
        c.complete("second")
    assert sleeps == [1.0, 2.0], "a blip on a server that answered before gets the usual retries"


@pytest.mark.integration
@pytest.mark.block_network(allowed_hosts=[r"127\.0\.0\.1$"])  # its API is on loopback
def test_one_querys_server_error_stays_an_error_the_technique_counts():
    with SimulatedAPI(lambda m, p: "ok", latency_s=0.0, error_rate=1.0) as api:
        c, sleeps = _client("openai/sim", api_base=api.api_base, api_key="sk-test")
        with pytest.raises(LLMError):
            c.complete("hi")
    assert sleeps == [1.0, 2.0]


@pytest.mark.unit
def test_techniques_that_fall_back_let_a_fatal_error_through(rag_hashing_embedder):
    from harness.techniques.generation import try_complete
    from harness.techniques.hyde import HyDE
    from harness.types import Trace

    c, _ = _client("openai/x", api_base=f"http://127.0.0.1:{closed_port()}/v1", api_key="sk-test")
    with pytest.raises(FatalModelError):
        try_complete(c, "hi", trace=Trace(), error_event="x_error")
    with pytest.raises(FatalModelError):  # HyDE would fall back to the raw query on an LLMError
        HyDE(c, rag_hashing_embedder).expand("what is lift?")


@pytest.mark.unit
def test_the_runner_halts_on_the_first_fatal_error_with_its_message(tmp_path: Path):
    from harness.retrieval.embed import HashingEmbedder
    from harness.retrieval.rerank import SentenceMaxSimReranker
    from harness.runner import RunHalted, run_experiments

    emb = HashingEmbedder(128)
    c, sleeps = _client("openai/x", api_base=f"http://127.0.0.1:{closed_port()}/v1", api_key="sk-test",
                        concurrency=4)
    with pytest.raises(RunHalted, match="cannot be called.*Connection refused"):
        run_experiments(KB, tmp_path / "out", llm=c, model="openai/x", embedder=emb, limit=6,
                        reranker=SentenceMaxSimReranker(emb, sentence_weight=0.0), db_uri=tmp_path / "db",
                        log_dir=tmp_path / "logs", concurrency=4)
    assert sleeps == [] and c.stats.calls <= 4, "at most the calls already in flight when the first failed"
    assert (tmp_path / "logs" / "e2_to_e4.log").read_text().count("CRITICAL") == 1


@pytest.mark.unit
def test_run_experiments_with_an_unknown_model_stops_before_indexing(tmp_path: Path, capsys):
    from harness.cli import main

    code = main(["run-experiments", "--model", "bogus/not-a-model", "--limit", "3", "--kb", str(KB),
                 "--out", str(tmp_path / "out"), "--logs", str(tmp_path / "logs")])
    err = capsys.readouterr().err
    assert code == 2 and "--model bogus/not-a-model" in err and "LLM Provider NOT provided" in err
    assert not (tmp_path / "out").exists()


# ---------------------------------------------------------------- the `error` verdict
@pytest.mark.unit
def test_arms_that_failed_past_the_limit_read_error_not_inconclusive():
    from harness.stats import paired_effect
    from harness.stats._verdict import MAX_FALLBACK_RATE, Decision, decide

    CI = Decision("ci")

    rng = np.random.default_rng(0)
    tied = paired_effect(np.ones(20), np.ones(20))  # every arm fell back to the same results
    v = decide(tied, ">=", 0.05, CI, fallback_rate=1.0, error_rate=1.0)
    assert v.verdict == "error" and "failed on 100% of queries" in v.reason
    strong = paired_effect(rng.normal(1.0, 0.1, 30), np.zeros(30))
    assert decide(strong, ">=", 0.05, CI, error_rate=MAX_FALLBACK_RATE).verdict == "supported"
    assert decide(strong, ">=", 0.05, CI, error_rate=0.5).verdict == "error"


@pytest.mark.unit
def test_an_error_on_any_dataset_is_the_claims_verdict_unless_another_refutes():
    from harness.catalogue import Spec
    from harness.report.summary import _overall
    from harness.stats._verdict import Decision

    spec = Spec(id="X", title="x", marker="benchmark", metric="m", comparator=">=", threshold=0.0,
                source="s", decision=Decision("ci"))
    e = lambda v, d: {"verdict": v, "dataset": d}  # noqa: E731
    assert _overall(spec, [e("supported", "a"), e("error", "b")])[0] == "error"
    assert _overall(spec, [e("refuted", "a"), e("error", "b")])[0] == "refuted"
