"""The run's spend ledger and cost cap, the cost estimate's stand-in client, concurrency with context, and the
progress line."""
from __future__ import annotations

import io
import threading
import time

import pytest

from harness.config import ModelPrice
from harness.llm.client import LLMClient, LLMError
from harness.llm.scripted import register
from harness.llm.spend import BudgetExhausted, Spend, current_technique, spending_for
from harness.parallel import ordered_map
from harness.progress import ProgressReporter, format_seconds, progress, progress_line, reporting, write_to
from harness.types import Trace

PRICE = ModelPrice(input_per_mtok=1_000_000, output_per_mtok=2_000_000)  # $1 a prompt token, $2 a completion one


def _client(spend: Spend | None, responder=lambda m, p: "two words", **kw) -> LLMClient:
    name = f"spend-{id(responder)}"
    return LLMClient(register(name, responder), price=PRICE, spend=spend, **kw)


# ---------------------------------------------------------------- the ledger
@pytest.mark.unit
def test_reserve_refuses_past_the_cap_and_counts_in_flight():
    s = Spend(10.0)
    a = s.reserve(4.0)
    b = s.reserve(5.0)
    with pytest.raises(BudgetExhausted, match=r"cap of \$10.0000.*spent \$0.0000, \$9.0000 in flight"):
        s.reserve(2.0)  # 0 spent + 9 in flight + 2 > 10
    assert s.refused == 1
    s.settle(a, 3.0)
    s.settle(b, 0.0)  # a failed request is not billed
    assert s.spent_usd == 3.0 and s.in_flight_usd == 0.0
    assert s.reserve(7.0) == 7.0  # 3 + 7 == 10 is within the cap
    with pytest.raises(ValueError):
        Spend(-1)


@pytest.mark.unit
def test_ledger_rows_by_technique_role_and_model():
    s = Spend()
    with spending_for("hyde"):
        assert current_technique() == "hyde"
        with spending_for("inner"):  # the outer technique keeps the calls
            s.record(model="m", role="pipeline", prompt_tokens=10, completion_tokens=2, cost_usd=0.5)
        s.record(model="m", role="pipeline", prompt_tokens=1, completion_tokens=1, cost_usd=None)
        s.record(model="m", role="pipeline", prompt_tokens=9, completion_tokens=9, cost_usd=9.0, cached=True)
    s.record(model="j", role="judge", prompt_tokens=4, completion_tokens=1, cost_usd=0.25)
    rows = {(r.technique, r.role): r for r in s.rows()}
    hyde = rows[("hyde", "pipeline")]
    assert (hyde.calls, hyde.cached_calls, hyde.prompt_tokens, hyde.completion_tokens, hyde.cost_usd,
            hyde.unpriced_calls) == (2, 1, 11, 3, 0.5, 1)
    assert rows[("(outside any technique)", "judge")].cost_usd == 0.25
    d = s.to_dict()
    assert d["by_role"]["pipeline"]["cost_usd"] == 0.5 and d["by_role"]["judge"]["calls"] == 1
    assert d["total"]["calls"] == 3


@pytest.mark.unit
def test_client_records_each_call_and_stops_at_the_cap():
    spend = Spend(40.0)
    # the prompt is 2 tokens (scripted counts words; the estimate counts 8 chars / 4), the answer 2: $2 + $4 = $6
    llm = _client(spend)
    with spending_for("demo"):
        for _ in range(6):
            llm.complete("abc defg", max_tokens=2)
        with pytest.raises(BudgetExhausted):  # 36 spent + an estimated 6 > 40
            llm.complete("abc defg", max_tokens=2)
    row = spend.rows()[0]
    assert (row.technique, row.calls, row.prompt_tokens, row.completion_tokens, row.cost_usd) == ("demo", 6, 12, 12, 36.0)
    assert spend.spent_usd == 36.0 and spend.refused == 1 and spend.in_flight_usd == 0.0
    assert llm.stats.calls == 6  # the refused call never left


@pytest.mark.unit
def test_budget_is_not_an_llm_error():
    assert not issubclass(BudgetExhausted, LLMError)  # no technique may absorb it as a model failure


@pytest.mark.unit
def test_cap_holds_with_calls_in_flight():
    """Concurrent calls reserve before they start: the cap is never passed by calls already in flight."""
    def slow(messages, params):
        time.sleep(0.02)
        return "two words"

    spend = Spend(60.0)
    llm = _client(spend, slow, concurrency=8)
    with pytest.raises(BudgetExhausted):
        llm.complete_many(["abc defg"] * 40, max_tokens=2)  # $6 a call, estimated exactly
    assert llm.stats.calls == 10 and spend.spent_usd == 60.0 and spend.in_flight_usd == 0.0


@pytest.mark.unit
def test_cap_needs_a_price():
    with pytest.raises(ValueError, match="no price is known"):
        LLMClient(register("unpriced", lambda m, p: "x"), spend=Spend(1.0))


# ---------------------------------------------------------------- concurrency with context
@pytest.mark.unit
def test_ordered_map_keeps_order_and_context():
    gate = threading.Barrier(2, timeout=10)  # the first two items meet: two threads must be running them at once

    def work(x: int) -> tuple:
        if x < 2:
            gate.wait()
        return x, current_technique(), threading.get_ident()

    with spending_for("outer"):
        out = ordered_map(work, range(20), 4)
    assert [o[0] for o in out] == list(range(20))
    assert {o[1] for o in out} == {"outer"}
    assert out[0][2] != out[1][2]  # really on several threads (not a single busy one that took every item)


@pytest.mark.unit
def test_calls_on_worker_threads_are_charged_to_the_callers_stage():
    llm = _client(None, concurrency=4)
    trace = Trace()
    with trace.stage("fan_out"):
        ordered_map(lambda p: llm.complete(p, trace=trace, max_tokens=2), ["abc defg"] * 6, 4)
    assert [s.name for s in trace.stages] == ["fan_out"]
    assert trace.stages[0].calls == 6 and trace.prompt_tokens == 12


# ---------------------------------------------------------------- progress
@pytest.mark.unit
def test_progress_line_by_hand():
    assert format_seconds(42) == "42s" and format_seconds(185) == "3m05s" and format_seconds(3720) == "1h02m"
    assert progress_line("hyde", 12, 40, 9.0, 3210, 0.0042) == \
        "hyde: 12/40 (30%), 9s elapsed, ETA 21s, 3,210 tokens, $0.0042"
    assert progress_line("idx", 5, 5, 1.0) == "idx: 5/5 (100%), 1s elapsed"


@pytest.mark.unit
def test_non_tty_progress_writes_a_line_every_tenth():
    lines: list[tuple[str, bool]] = []
    spend = Spend()
    with reporting(ProgressReporter(lambda t, f: lines.append((t, f)), tty=False, spend=spend, min_stage_s=0)):
        bar = progress("stage", 100)
        for _ in range(100):
            spend.record(model="m", role="pipeline", prompt_tokens=1, completion_tokens=1, cost_usd=0.01)
            bar.advance()
        bar.close()  # already closed at 100/100: nothing more
    assert len(lines) == 10 and all(f for _, f in lines)  # 10%, ..., 90%, then done
    assert lines[-1][0].startswith("stage: 100/100 (100%)") and "200 tokens" in lines[-1][0] and "$1.0000" in lines[-1][0]
    assert [t.split(" ")[1] for t, _ in lines[:3]] == ["10/100", "20/100", "30/100"]


@pytest.mark.unit
def test_tty_progress_updates_in_place_and_ends_the_line():
    buf = io.StringIO()
    buf.isatty = lambda: True  # type: ignore[method-assign]
    with reporting(ProgressReporter(write_to(buf), tty=True, min_interval_s=0.0, min_stage_s=0)):
        bar = progress("s", 3)
        for _ in range(3):
            bar.advance()
    out = buf.getvalue()
    assert out.count("\r") == 3 and out.endswith("\x1b[K\n") and out.count("\n") == 1


@pytest.mark.unit
def test_short_stages_write_nothing():
    lines: list[str] = []
    with reporting(ProgressReporter(lambda t, f: lines.append(t), tty=False, min_stage_s=60)):
        bar = progress("quick", 5)
        for _ in range(5):
            bar.advance()
    assert lines == []


@pytest.mark.unit
def test_no_reporter_no_output():
    with reporting(None):  # (pytest's own reporter is installed around this test)
        bar = progress("quiet", 10)
        bar.advance()
        bar.close()
    assert bar.done == 0  # a silent counter does no work at all


# ---------------------------------------------------------------- the runner under a cap
@pytest.mark.integration
def test_runner_stops_at_the_cap_and_resumes_without_loss(tmp_path):
    import json
    from pathlib import Path

    from harness.retrieval.embed import HashingEmbedder
    from harness.retrieval.rerank import SentenceMaxSimReranker
    from harness.runner import run_experiments
    from harness.techniques.e2e4.pipelines import dry_run_responder

    kb = Path(__file__).resolve().parents[1] / "fixtures" / "retail_kb"
    emb = HashingEmbedder(128)
    kw = dict(embedder=emb, reranker=SentenceMaxSimReranker(emb, sentence_weight=0.0), db_uri=tmp_path / "db",
              limit=10, log_dir=tmp_path / "logs", model="scripted/e2e4", concurrency=4)
    cheap = ModelPrice(input_per_mtok=1.0, output_per_mtok=1.0)
    model = register("e2e4-budget", dry_run_responder())
    probe = Spend()
    run_experiments(kb, tmp_path / "probe", llm=LLMClient(model, price=cheap, spend=probe), **kw)
    spend = Spend(probe.spent_usd / 3)
    s = run_experiments(kb, tmp_path / "out", llm=LLMClient(model, price=cheap, spend=spend, concurrency=4), **kw)
    written = sum(s.written.values())
    assert s.budget_stopped and 0 < written < 30 and s.not_started == 30 - written
    assert spend.spent_usd <= spend.max_usd
    s2 = run_experiments(kb, tmp_path / "out", llm=LLMClient(model, price=cheap, spend=Spend()), **kw)
    assert not s2.budget_stopped and sum(s2.written.values()) == 30 - written
    for f in ("e2_standard_rag.jsonl", "e3_filtered_rag.jsonl", "e4_reasoning_rag.jsonl"):
        ids = [json.loads(line)["query_id"] for line in (tmp_path / "out" / f).read_text().splitlines()]
        assert len(ids) == len(set(ids)) == 10


# ---------------------------------------------------------------- the estimate's stand-in
@pytest.mark.unit
def test_estimating_client_counts_with_the_models_tokenizer_and_calls_nothing():
    import tiktoken  # litellm's dependency; its cl100k/o200k files ship inside litellm

    from harness.llm.estimate import EstimatingClient, estimate_dict, estimate_lines, stand_in_responder

    spend = Spend()
    llm = EstimatingClient("openai/gpt-4o-mini", lambda m, p: "Paris is the capital.", spend=spend, price=PRICE)
    assert llm.with_cache(object()) is llm  # never turns into a client that calls
    with spending_for("demo"):
        res = llm.complete("What is the capital of France?", max_tokens=8)
    enc = tiktoken.get_encoding("o200k_base")  # gpt-4o-mini's tokenizer, counted independently
    assert res.completion_tokens == len(enc.encode("Paris is the capital.")) == 5
    assert res.prompt_tokens >= len(enc.encode("What is the capital of France?"))  # plus the chat framing
    assert res.cost_usd == res.prompt_tokens * 1 + res.completion_tokens * 2
    row = spend.rows()[0]
    assert (row.technique, row.calls, row.cost_usd) == ("demo", 1, res.cost_usd)
    lines = estimate_lines(estimate_dict(spend, "openai/gpt-4o-mini", llm.tokenizer, PRICE))
    assert lines[0].startswith("cost estimate for openai/gpt-4o-mini") and lines[-1].split()[0] == "total"
    stand_in = stand_in_responder(words=3)
    assert stand_in([{"role": "user", "content": "[1] alpha beta gamma delta"}], {"max_tokens": 64}) == "alpha beta gamma"
    assert stand_in([{"role": "system", "content": "give reasoning_steps"}, {"role": "user", "content": "q"}],
                    {}).startswith('{"reasoning_steps"')


@pytest.mark.integration
def test_cli_progress_on_stderr_and_results_unchanged(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    kb = Path(__file__).resolve().parents[1] / "fixtures" / "retail_kb"
    cmd = [sys.executable, "-c", "import sys; from harness.cli import main; sys.exit(main())", "run-experiments",
           "--kb", str(kb), "--dry-run", "--limit", "5", "--logs", str(tmp_path / "logs"), "--progress"]
    proc = subprocess.run(cmd + ["--out", str(tmp_path / "out")], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("e2+e3+e4 study:")]
    assert lines[-1].startswith("e2+e3+e4 study: 15/15 (100%)") and len(lines) >= 2
    assert proc.stdout == ""  # the log stays in its file
    assert "Processing" in (tmp_path / "logs" / "e2_to_e4.log").read_text()


@pytest.mark.unit
def test_prices_come_from_litellms_bundled_map():
    from harness.llm.client import litellm_price

    p = litellm_price("openai/gpt-4o-mini")  # the list price, read from the local copy of the cost map
    assert (p.input_per_mtok, p.output_per_mtok) == pytest.approx((0.15, 0.60)) and p.source == "litellm cost map"
    assert litellm_price("local/no-such-model") is None


@pytest.mark.integration
@pytest.mark.block_network(allowed_hosts=[r"127\.0\.0\.1$"])  # its API is on loopback
def test_failed_requests_are_counted_apart_from_billed_calls(monkeypatch):
    from harness.llm.simulated import SimulatedAPI
    from harness.report.spend import spend_lines, spend_summary

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    spend = Spend()
    with SimulatedAPI(lambda m, p: "an answer", latency_s=0.0, error_rate=0.4, seed=3) as api:
        llm = LLMClient("openai/sim", api_base=api.api_base, price=PRICE, spend=spend, max_attempts=5,
                        sleep=lambda s: None, concurrency=1)
        with spending_for("demo"):
            results = [llm.complete(f"question {i}", max_tokens=4) for i in range(12)]
    row = spend.rows()[0]
    errors = sum(n for status, n in api.log.statuses.items() if status != 200)
    assert errors > 0 and len(results) == 12
    assert (row.calls, row.failed_calls) == (api.log.statuses[200], errors) == (12, errors)
    lines = spend_lines(spend_summary([{**vars(r)} for r in spend.rows()]))
    assert f"(12 calls, {errors} failed)" in lines[-1]
