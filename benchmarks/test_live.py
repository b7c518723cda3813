"""Live-model behaviour against the simulated OpenAI-compatible API on loopback (never the internet): the
E2-E4 study's throughput under concurrency beside the sequential rate, the client's requests-per-minute limit
and crash safety under 429s, 500s and kill -9. `pytest -m benchmark -k live`.

Throughput runs on the wall clock: what it checks is how far the harness's own (real) time keeps the study
from API speed, so its 300 ms latency is real. The others run on a scaled clock (harness.llm.clock.ScaledClock):
the server, the clients (in the kill -9 study, the killed one in a subprocess) and the test read one simulated
time, faster than the wall's, so latency, backoff, Retry-After and the 60 s windows all shrink together."""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from harness.config import ModelPrice
from harness.data import load_experiment_inputs
from harness.data.experiment import first_of_each_type
from harness.llm.client import LLMClient
from harness.llm.clock import ScaledClock
from harness.llm.simulated import SimulatedAPI, extractive_responder
from harness.llm.spend import Spend
from harness.retrieval.embed import HashingEmbedder
from harness.retrieval.rerank import SentenceMaxSimReranker
from harness.runner import run_experiments
from harness.techniques.e2e4.pipelines import EXPERIMENTS, dry_run_responder

pytestmark = [pytest.mark.benchmark, pytest.mark.selfcheck]  # the harness checking itself
KB = Path(__file__).resolve().parents[1] / "fixtures" / "retail_kb"
LATENCY_S, CONCURRENCY, RPM, ERROR_RATE, FAULT_QUERIES = 0.3, 8, 60, 0.05, 40
THROTTLE_RATE = 0.05  # the fault study's API also answers 5% of requests 429 whatever its window (a shared quota)
SEQUENTIAL_QUERIES = 6  # the sequential rate's sample: 6 queries (2 of each type) x 3 calls, 300 ms a call
# the fault study's clock: 1 simulated second = 50 ms, a 60 s window = 3 s. The harness's own work stays real,
# so the faster the clock, the slower the client looks in simulated time: at this scale, unlimited, it still
# sends a few times RPM a simulated minute (the report's unlimited_requests_per_60s), so it is the limit that
# holds it back and a client without one fills a window past RPM; a much faster clock would hide that
TIME_SCALE = 20.0
MODEL = "simulated/openai-compatible"


@pytest.fixture(scope="module")
def throughput_study(tmp_path_factory):
    """The E2-E4 study against one simulated API (300 ms a call, wall clock): all 150 queries at concurrency 8,
    and the sequential rate on SEQUENTIAL_QUERIES of them (the query types in turn): seconds a call at
    concurrency 1, from one request's arrival to the next, so a run's set-up (which 450 calls shared, 18 would
    not) is left out, and so is its first call's first-use work (imports, the HTTP client). Coming first, the
    sample leaves that work done for the concurrent run, as the full sequential pass did (an untimed pass at
    concurrency 8 before both measured no different). A weight-free embedder and reranker keep the measurement
    on the LLM calls."""
    emb = HashingEmbedder(384)
    reranker = SentenceMaxSimReranker(emb, sentence_weight=0.0)
    out, db = {}, tmp_path_factory.mktemp("index") / "db"

    def study(api: SimulatedAPI, conc: int, limit: int | None) -> dict:
        d = tmp_path_factory.mktemp("study")
        llm = LLMClient("openai/sim", api_base=api.api_base, api_key="sk-sim", concurrency=conc, label=MODEL)
        served, t0 = len(api.log.served), time.perf_counter()
        summary = run_experiments(KB, d / "out", llm=llm, model=MODEL, log_dir=d / "logs", embedder=emb,
                                  reranker=reranker, db_uri=db, concurrency=conc, limit=limit)
        wall = time.perf_counter() - t0 - summary.index_seconds
        times = sorted(api.log.served[served:])  # arrival times of the requests answered
        return {"wall_s": wall, "calls": len(times), "ideal_s": len(times) * LATENCY_S / conc, "concurrency": conc,
                # one call after another: arrival to arrival is a call's whole cycle (no set-up or last write)
                "s_per_call": (times[-1] - times[0]) / (len(times) - 1) if conc == 1 else wall / len(times),
                "written": sum(summary.written.values()), "failed": sum(map(len, summary.failed.values()))}

    with SimulatedAPI(dry_run_responder(), latency_s=LATENCY_S) as api:
        out["sequential"] = study(api, 1, SEQUENTIAL_QUERIES)
        out["concurrent"] = study(api, CONCURRENCY, None)
    return out


@pytest.mark.spec("LIVE-THROUGHPUT")
def test_throughput_against_the_ideal(throughput_study, rag_check, rag_measure):
    seq, con = throughput_study["sequential"], throughput_study["concurrent"]
    assert con["written"] == 450 and seq["written"] == 3 * SEQUENTIAL_QUERIES and con["failed"] == 0
    for mode, r in throughput_study.items():
        rag_measure(f"e2e4_{mode}_wall_s", r["wall_s"], calls=r["calls"], concurrency=r["concurrency"], model=MODEL,
                latency_s=LATENCY_S, s_per_call=r["s_per_call"])
    sequential_s = seq["s_per_call"] * con["calls"]  # the sequential rate over the concurrent run's calls
    rag_check("LIVE-THROUGHPUT", con["wall_s"] / con["ideal_s"], model=MODEL, dataset="retail_kb (150 queries x 3)",
          calls=con["calls"], latency_s=LATENCY_S, concurrency=CONCURRENCY, wall_s=con["wall_s"],
          ideal_s=con["ideal_s"], sequential_s_per_call=seq["s_per_call"], sequential_calls=seq["calls"],
          sequential_wall_s_estimated=sequential_s, speedup=sequential_s / con["wall_s"],
          timing="the query phase (indexing excluded), retrieval and reranking included; "
                 f"sequential: seconds a call at concurrency 1, arrival to arrival over {seq['calls']} calls "
                 f"({SEQUENTIAL_QUERIES} queries), times the concurrent run's calls")


FAULT_SCRIPT = textwrap.dedent("""
    import sys
    from harness.plugin.controls import apply_from_env
    apply_from_env()
    from harness.retrieval.embed import HashingEmbedder
    from harness.retrieval.rerank import SentenceMaxSimReranker
    from harness.llm.client import LLMClient
    from harness.llm.clock import ScaledClock
    from harness.runner import run_experiments
    api_base, out, rpm, conc, limit = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    emb = HashingEmbedder(384)
    llm = LLMClient("openai/sim", api_base=api_base, api_key="sk-sim", concurrency=conc, requests_per_minute=rpm,
                    backoff_s=1.0, max_attempts=3, label="simulated/openai-compatible",
                    clock=ScaledClock(float(sys.argv[7])))
    run_experiments(sys.argv[6], out, llm=llm, model="simulated/openai-compatible", log_dir=out + "/logs",
                    embedder=emb, reranker=SentenceMaxSimReranker(emb, sentence_weight=0.0), limit=limit,
                    concurrency=conc)
""")


def _lines(files: list[Path]) -> int:
    return sum(f.read_text().count("\n") for f in files if f.exists())


@pytest.fixture(scope="module")
def fault_study(tmp_path_factory):
    """40 queries x 3 pipelines against an API limited to 60 rpm that fails 5% of requests with a 500 and throttles
    5% with a 429: a client process (60 rpm, concurrency 8) is killed with SIGKILL mid-run, and a fresh client and
    run (in this process) resume from the files it left, its rate window included. Server and clients share a
    clock TIME_SCALE times faster than the wall's. The resume is set up while the first process runs (imports,
    its own index) and held where it reads the result files until that process is dead, so it is released within
    the killed run's last window, as a resume right after a crash would be against a real API: the window it
    carries is what keeps it from sending into that minute's requests."""
    from harness import runner

    out = tmp_path_factory.mktemp("faults") / "out"
    files = [out / cls.output for name, cls in EXPERIMENTS.items() if name in ("e2", "e3", "e4")]
    clock = ScaledClock(TIME_SCALE)
    held, killed, resumed, carried = threading.Event(), threading.Event(), [], []
    read_ids = runner.completed_ids

    def completed_ids(path: Path) -> set[str]:
        held.set()
        killed.wait()
        return read_ids(path)

    def resume() -> None:
        with SimulatedAPI(dry_run_responder(), latency_s=0.0) as spare:  # the client's first-call set-up, now
            LLMClient("openai/sim", api_base=spare.api_base, api_key="sk-sim", label=MODEL).complete("warm-up")
        llm = LLMClient("openai/sim", api_base=api.api_base, api_key="sk-sim", concurrency=CONCURRENCY,
                        requests_per_minute=RPM, backoff_s=1.0, max_attempts=3, label=MODEL, clock=clock)
        carry = llm.carry_rate_windows
        llm.carry_rate_windows = lambda d: carried.append(carry(d)) or carried[-1]  # how many slots it read
        emb = HashingEmbedder(384)
        resumed.append(run_experiments(KB, out, llm=llm, model=MODEL, log_dir=out / "logs", embedder=emb,
                                       reranker=SentenceMaxSimReranker(emb, sentence_weight=0.0),
                                       limit=FAULT_QUERIES, concurrency=CONCURRENCY, db_uri=out / ".lancedb-resume"))

    with SimulatedAPI(dry_run_responder(), latency_s=0.05, rpm=RPM, error_rate=ERROR_RATE, seed=7,
                      throttle_rate=THROTTLE_RATE, clock=clock) as api, pytest.MonkeyPatch.context() as mp:
        mp.setattr(runner, "completed_ids", completed_ids)
        args = [sys.executable, "-c", FAULT_SCRIPT, api.api_base, str(out), str(RPM), str(CONCURRENCY),
                str(FAULT_QUERIES), str(KB), str(TIME_SCALE)]
        t0, started = clock.monotonic(), time.monotonic()
        proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        resuming = threading.Thread(target=resume)
        try:
            resuming.start()
            deadline = time.monotonic() + 300
            # killed once it has written 30 results and the resume is ready (at 90 whatever the resume's state)
            while time.monotonic() < deadline and proc.poll() is None:
                n = _lines(files)
                if n >= 90 or (n >= 30 and held.is_set()):
                    break
                time.sleep(0.01)
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            windows = [(t0, clock.monotonic())]
            killed_after = _lines(files)
            t1 = clock.monotonic()
            killed.set()
            resuming.join()
        windows.append((t1, clock.monotonic()))
        real_s = time.monotonic() - started
        assert resumed, "the resumed run raised (see the captured stderr)"
        log = api.log
    # the run's `limit` takes the query types in turn (harness.data.experiment.first_of_each_type)
    ids = {q.query_id for q in first_of_each_type(load_experiment_inputs(KB).queries, FAULT_QUERIES)}
    lost = dupes = 0
    for f in files:
        got = [json.loads(line)["query_id"] for line in f.read_text().splitlines()] if f.exists() else []
        lost += len(ids - set(got))
        dupes += len(got) - len(set(got))
    per_process = [[t for t in log.arrivals if a <= t <= b] for a, b in windows]
    last_killed = max(per_process[0])
    # simulated seconds from the killed process's last request to the resumed one's first (the carried window
    # makes the resume wait for room), and to the resume's release (under 60: a window spans the kill)
    resume_gap_s = min(per_process[1]) - last_killed
    released_after_s = t1 - last_killed
    # every 60 s window holding requests of both processes lies within a minute either side of the killed
    # process's last request
    around = [t for t in log.arrivals if last_killed - 60.0 <= t <= last_killed + 60.0]
    # nothing holds back the first RPM requests of the first process (its window and the server's start empty):
    # their pace, in requests a simulated minute, is what the client sends unlimited. Well above RPM, it is the
    # limit that holds the client back, and a client without it would put more than RPM in a window
    first = sorted(per_process[0])[:RPM]
    pace = (len(first) - 1) / (first[-1] - first[0]) * 60.0
    return {"resume_gap_s": round(resume_gap_s, 1), "unlimited_pace": round(pace), "lost": lost, "duplicated": dupes,
            "killed_after": killed_after, "expected": 3 * len(ids),
            "peaks": [log.peak_rate(60.0, ts) for ts in per_process], "peak_all": log.peak_rate(60.0, log.arrivals),
            "peak_around_kill": log.peak_rate(60.0, around), "requests_around_kill": len(around),
            "released_after_s": round(released_after_s, 1), "carried_slots": carried[0] if carried else None,
            "requests": [len(ts) for ts in per_process], "simulated_s": [round(b - a, 1) for a, b in windows],
            "real_s": round(real_s, 1), "statuses": dict(log.statuses)}


@pytest.mark.spec("LIVE-NO-LOSS")
def test_no_result_lost_or_duplicated(fault_study, rag_check):
    f = fault_study
    assert 0 < f["killed_after"] < f["expected"], "killed mid-run"
    assert f["statuses"].get(429), "the run met no 429 (the API throttles a share of requests whatever its window)"
    rag_check("LIVE-NO-LOSS", f["lost"] + f["duplicated"], model=MODEL, lost=f["lost"], duplicated=f["duplicated"],
          killed_after=f["killed_after"], results=f["expected"], statuses=f["statuses"], error_rate=ERROR_RATE,
          rpm=RPM, time_scale=TIME_SCALE, resume_gap_s=f["resume_gap_s"])


@pytest.mark.spec("LIVE-RATE-LIMIT")
def test_client_stays_within_its_rate_limit(fault_study, rag_check):
    f = fault_study
    rag_check("LIVE-RATE-LIMIT", f["peak_all"] / RPM, model=MODEL, peak_requests_per_60s=f["peak_all"],
          peak_per_process=f["peaks"], rpm=RPM,
          requests=f["requests"], statuses=f["statuses"], simulated_s=f["simulated_s"], real_s=f["real_s"],
          unlimited_requests_per_60s=f["unlimited_pace"],
          clock=f"scaled x{TIME_SCALE:g}: a simulated 60 s window lasts {60 / TIME_SCALE:g} s",
          measured="requests the API received in any simulated 60 s window of the run: the killed client process's, "
                   "the resumed one's, and the windows spanning the kill")


@pytest.mark.spec("LIVE-RATE-LIMIT-RESUME")
def test_a_resume_keeps_the_killed_runs_rate_window(fault_study, rag_check):
    f = fault_study
    # a resume released a minute or more after the killed run's last request shares no window with it
    assert f["released_after_s"] < 60.0, f"the resume was released {f['released_after_s']} s after the kill"
    rag_check("LIVE-RATE-LIMIT-RESUME", f["peak_around_kill"] / RPM, model=MODEL,
          peak_requests_per_60s_around_the_kill=f["peak_around_kill"], rpm=RPM,
          requests_around_the_kill=f["requests_around_kill"], carried_slots=f["carried_slots"],
          released_after_s=f["released_after_s"], resume_gap_s=f["resume_gap_s"], statuses=f["statuses"],
          clock=f"scaled x{TIME_SCALE:g}: a simulated 60 s window lasts {60 / TIME_SCALE:g} s",
          measured="requests the API received in any simulated 60 s window within a minute either side of the "
                   "killed process's last request (every window that holds requests of both processes)")


PRICE = ModelPrice(input_per_mtok=0.15, output_per_mtok=0.60, source="gpt-4o-mini list price, for the simulated API")
BUDGET_LATENCY_S = 0.05  # simulated seconds, on BUDGET_CLOCK (5 ms of real time)
BUDGET_CLOCK = ScaledClock(10)  # budget and estimate check money and tokens, not time


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
    with SimulatedAPI(dry_run_responder(), latency_s=BUDGET_LATENCY_S, clock=BUDGET_CLOCK) as api:
        for mode in ("uncapped", "half"):
            cap = None if mode == "uncapped" else runs["uncapped"]["spent_usd"] / 2
            spend = Spend(cap)
            llm = LLMClient("openai/sim", api_base=api.api_base, api_key="sk-sim", concurrency=CONCURRENCY,
                            label=MODEL, price=PRICE, spend=spend, clock=BUDGET_CLOCK)
            served = len(api.log.served)
            summary = _study(tmp_path_factory.mktemp(f"budget-{mode}"), llm)
            runs[mode] = {"calls": len(api.log.served) - served, "spent_usd": spend.spent_usd, "cap_usd": cap,
                          "stopped": summary.budget_stopped, "not_started": summary.not_started,
                          "written": sum(summary.written.values()), "refused": spend.refused}
    return runs


@pytest.mark.spec("LIVE-BUDGET")
def test_half_budget_stops_halfway(budget_study, rag_check):
    full, half = budget_study["uncapped"], budget_study["half"]
    assert full["written"] == 450 and not full["stopped"]
    rag_check("LIVE-BUDGET", half["calls"] / full["calls"], model=MODEL, calls_uncapped=full["calls"],
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
    _study(d, estimator)  # the CLI's runs one call at a time; its totals are sums over the same calls either way
    est = spend.totals()
    with SimulatedAPI(extractive_responder(), latency_s=BUDGET_LATENCY_S, clock=BUDGET_CLOCK) as api:
        llm = LLMClient("openai/sim", api_base=api.api_base, api_key="sk-sim", concurrency=CONCURRENCY, label=MODEL,
                        price=PRICE, clock=BUDGET_CLOCK)
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
def test_estimate_against_the_bill(estimate_study, rag_check):
    e = estimate_study
    assert e["billed_calls"] == 450
    rag_check("LIVE-ESTIMATE", e["estimated_usd"] / e["billed_usd"], model=MODEL, **e, price=PRICE.model_dump(),
          simulated_tokenizer="4 characters per token", estimate_model="openai/gpt-4o-mini")
