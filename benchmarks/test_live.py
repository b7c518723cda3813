"""Live-model behaviour against the simulated OpenAI-compatible API on loopback (never the internet): the
E2-E4 study's throughput under concurrency beside the sequential run, the client's requests-per-minute limit
and crash safety under 429s, 500s and kill -9. `pytest -m benchmark -k live`."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from harness.config import ModelPrice
from harness.data import load_experiment_inputs
from harness.data.experiment import first_of_each_type
from harness.llm.client import LLMClient
from harness.llm.simulated import SimulatedAPI, extractive_responder
from harness.llm.spend import Spend
from harness.retrieval.embed import HashingEmbedder
from harness.retrieval.rerank import SentenceMaxSimReranker
from harness.runner import run_experiments
from harness.techniques.e2e4 import EXPERIMENTS, dry_run_responder

pytestmark = pytest.mark.benchmark
KB = Path(__file__).resolve().parents[1] / "fixtures" / "retail_kb"
LATENCY_S, CONCURRENCY, RPM, ERROR_RATE, FAULT_QUERIES = 0.3, 8, 60, 0.05, 40
MODEL = "simulated/openai-compatible"


@pytest.fixture(scope="module")
def throughput_study(tmp_path_factory):
    """The E2-E4 study over the 150 queries, sequential then concurrent, against one simulated API (300 ms per
    call). A weight-free embedder and reranker keep the measurement on the LLM calls."""
    emb = HashingEmbedder(384)
    reranker = SentenceMaxSimReranker(emb, sentence_weight=0.0)
    out = {}
    with SimulatedAPI(dry_run_responder(), latency_s=LATENCY_S) as api:
        for mode, conc in (("sequential", 1), ("concurrent", CONCURRENCY)):
            d = tmp_path_factory.mktemp(mode)
            llm = LLMClient("openai/sim", api_base=api.api_base, api_key="sk-sim", concurrency=conc, label=MODEL)
            served = len(api.log.served)
            t0 = time.perf_counter()
            summary = run_experiments(KB, d / "out", llm=llm, model=MODEL, log_dir=d / "logs", embedder=emb,
                                      reranker=reranker, db_uri=d / "db", concurrency=conc)
            wall = time.perf_counter() - t0 - summary.index_seconds
            calls = len(api.log.served) - served
            out[mode] = {"wall_s": wall, "calls": calls, "ideal_s": calls * LATENCY_S / conc, "concurrency": conc,
                         "written": sum(summary.written.values()), "failed": sum(map(len, summary.failed.values()))}
    return out


@pytest.mark.spec("LIVE-THROUGHPUT")
def test_throughput_against_the_ideal(throughput_study, check, measure):
    seq, con = throughput_study["sequential"], throughput_study["concurrent"]
    assert con["written"] == seq["written"] == 450 and con["failed"] == 0
    for mode, r in throughput_study.items():
        measure(f"e2e4_{mode}_wall_s", r["wall_s"], calls=r["calls"], concurrency=r["concurrency"], model=MODEL,
                latency_s=LATENCY_S)
    check("LIVE-THROUGHPUT", con["wall_s"] / con["ideal_s"], model=MODEL, dataset="retail_kb (150 queries x 3)",
          calls=con["calls"], latency_s=LATENCY_S, concurrency=CONCURRENCY, wall_s=con["wall_s"],
          ideal_s=con["ideal_s"], sequential_wall_s=seq["wall_s"], speedup=seq["wall_s"] / con["wall_s"],
          timing="the query phase (indexing excluded), retrieval and reranking included")


FAULT_SCRIPT = textwrap.dedent("""
    import sys
    from harness.controls import apply_from_env
    apply_from_env()
    from harness.retrieval.embed import HashingEmbedder
    from harness.retrieval.rerank import SentenceMaxSimReranker
    from harness.llm.client import LLMClient
    from harness.runner import run_experiments
    api_base, out, rpm, conc, limit = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    emb = HashingEmbedder(384)
    llm = LLMClient("openai/sim", api_base=api_base, api_key="sk-sim", concurrency=conc, requests_per_minute=rpm,
                    backoff_s=1.0, max_attempts=3, label="simulated/openai-compatible")
    run_experiments(sys.argv[6], out, llm=llm, model="simulated/openai-compatible", log_dir=out + "/logs",
                    embedder=emb, reranker=SentenceMaxSimReranker(emb, sentence_weight=0.0), limit=limit,
                    concurrency=conc)
""")


@pytest.fixture(scope="module")
def fault_study(tmp_path_factory):
    """40 queries x 3 pipelines against an API limited to 60 rpm that fails 5% of requests with a 500; the
    client (60 rpm, concurrency 8) is killed with SIGKILL mid-run and resumed."""
    out = tmp_path_factory.mktemp("faults") / "out"
    files = [out / cls.output for name, cls in EXPERIMENTS.items() if name in ("e2", "e3", "e4")]
    with SimulatedAPI(dry_run_responder(), latency_s=0.05, rpm=RPM, error_rate=ERROR_RATE, seed=7) as api:
        args = [sys.executable, "-c", FAULT_SCRIPT, api.api_base, str(out), str(RPM), str(CONCURRENCY),
                str(FAULT_QUERIES), str(KB)]
        windows = []
        t0 = time.monotonic()
        proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and sum(f.read_text().count("\n") for f in files if f.exists()) < 30:
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        windows.append((t0, time.monotonic()))
        killed_after = sum(f.read_text().count("\n") for f in files if f.exists())
        t1 = time.monotonic()
        done = subprocess.run(args, capture_output=True, text=True, timeout=540)
        windows.append((t1, time.monotonic()))
        assert done.returncode == 0, done.stderr[-2000:]
        log = api.log
    # the run's `limit` takes the query types in turn (harness.data.experiment.first_of_each_type)
    ids = {q.query_id for q in first_of_each_type(load_experiment_inputs(KB).queries, FAULT_QUERIES)}
    lost = dupes = 0
    for f in files:
        got = [json.loads(line)["query_id"] for line in f.read_text().splitlines()] if f.exists() else []
        lost += len(ids - set(got))
        dupes += len(got) - len(set(got))
    peaks = [log.peak_rate(60.0, [t for t in log.arrivals if a <= t <= b]) for a, b in windows]
    return {"lost": lost, "duplicated": dupes, "killed_after": killed_after, "peaks": peaks,
            "statuses": dict(log.statuses), "expected": 3 * len(ids)}


@pytest.mark.spec("LIVE-NO-LOSS")
def test_no_result_lost_or_duplicated(fault_study, check):
    f = fault_study
    assert 0 < f["killed_after"] < f["expected"], "killed mid-run"
    check("LIVE-NO-LOSS", f["lost"] + f["duplicated"], model=MODEL, lost=f["lost"], duplicated=f["duplicated"],
          killed_after=f["killed_after"], results=f["expected"], statuses=f["statuses"], error_rate=ERROR_RATE,
          rpm=RPM)


@pytest.mark.spec("LIVE-RATE-LIMIT")
def test_client_stays_within_its_rate_limit(fault_study, check):
    f = fault_study
    check("LIVE-RATE-LIMIT", max(f["peaks"]) / RPM, model=MODEL, peak_requests_per_60s=f["peaks"], rpm=RPM,
          statuses=f["statuses"], measured="requests the API received, per client process (before and after the kill)")


PRICE = ModelPrice(input_per_mtok=0.15, output_per_mtok=0.60, source="gpt-4o-mini list price, for the simulated API")
BUDGET_LATENCY_S = 0.05


def _study(out: Path, llm: LLMClient, *, concurrency: int = CONCURRENCY):
    emb = HashingEmbedder(384)
    return run_experiments(KB, out / "out", llm=llm, model=MODEL, log_dir=out / "logs", embedder=emb,
                           reranker=SentenceMaxSimReranker(emb, sentence_weight=0.0), db_uri=out / "db",
                           concurrency=concurrency)


@pytest.fixture(scope="module")
def budget_study(tmp_path_factory):
    """The E2-E4 study (150 queries x 3) against the simulated API, uncapped, then capped at half of what the
    uncapped run spent; both at concurrency 8, so the cap is held with calls in flight."""
    runs = {}
    with SimulatedAPI(dry_run_responder(), latency_s=BUDGET_LATENCY_S) as api:
        for mode in ("uncapped", "half"):
            cap = None if mode == "uncapped" else runs["uncapped"]["spent_usd"] / 2
            spend = Spend(cap)
            llm = LLMClient("openai/sim", api_base=api.api_base, api_key="sk-sim", concurrency=CONCURRENCY,
                            label=MODEL, price=PRICE, spend=spend)
            served = len(api.log.served)
            summary = _study(tmp_path_factory.mktemp(f"budget-{mode}"), llm)
            runs[mode] = {"calls": len(api.log.served) - served, "spent_usd": spend.spent_usd, "cap_usd": cap,
                          "stopped": summary.budget_stopped, "not_started": summary.not_started,
                          "written": sum(summary.written.values()), "refused": spend.refused}
    return runs


@pytest.mark.spec("LIVE-BUDGET")
def test_half_budget_stops_halfway(budget_study, check):
    full, half = budget_study["uncapped"], budget_study["half"]
    assert full["written"] == 450 and not full["stopped"]
    check("LIVE-BUDGET", half["calls"] / full["calls"], model=MODEL, calls_uncapped=full["calls"],
          calls_with_half_budget=half["calls"], spent_uncapped_usd=full["spent_usd"], cap_usd=half["cap_usd"],
          spent_capped_usd=half["spent_usd"], results_written=half["written"], not_started=half["not_started"],
          stopped_by_cap=half["stopped"], concurrency=CONCURRENCY, price=PRICE.model_dump())


@pytest.fixture(scope="module")
def estimate_study(tmp_path_factory):
    """The estimate `--estimate-cost` prints for the E2-E4 study (a run through the stand-in, counted with
    gpt-4o-mini's tokenizer), then the real study against the simulated API, which answers in its own words
    and lengths (an extractive responder) and bills its own token counts (4 characters a token)."""
    from harness.llm.estimate import EstimatingClient, stand_in_responder

    spend = Spend()
    estimator = EstimatingClient("openai/gpt-4o-mini", stand_in_responder(), spend=spend, price=PRICE)
    d = tmp_path_factory.mktemp("estimate")
    _study(d, estimator, concurrency=1)
    est = spend.totals()
    with SimulatedAPI(extractive_responder(), latency_s=BUDGET_LATENCY_S) as api:
        llm = LLMClient("openai/sim", api_base=api.api_base, api_key="sk-sim", concurrency=CONCURRENCY, label=MODEL,
                        price=PRICE)
        _study(tmp_path_factory.mktemp("estimate-real"), llm)
        billed = PRICE.cost(api.log.prompt_tokens, api.log.completion_tokens)
        log = api.log
    return {"estimated_usd": est.cost_usd, "estimated_calls": est.calls, "estimated_prompt_tokens": est.prompt_tokens,
            "estimated_completion_tokens": est.completion_tokens, "billed_usd": billed,
            "billed_calls": log.statuses[200], "billed_prompt_tokens": log.prompt_tokens,
            "billed_completion_tokens": log.completion_tokens, "tokenizer": estimator.tokenizer,
            "by_experiment": {r.technique: r.cost_usd for r in spend.rows()},
            "prompt_tokens_ratio": est.prompt_tokens / log.prompt_tokens,
            "completion_tokens_ratio": est.completion_tokens / log.completion_tokens}


@pytest.mark.spec("LIVE-ESTIMATE")
def test_estimate_against_the_bill(estimate_study, check):
    e = estimate_study
    assert e["billed_calls"] == 450
    check("LIVE-ESTIMATE", e["estimated_usd"] / e["billed_usd"], model=MODEL, **e, price=PRICE.model_dump(),
          simulated_tokenizer="4 characters per token", estimate_model="openai/gpt-4o-mini")
