"""RET's six evaluation gates as matched pairs (RET off vs on, same model, same seed), on the set named by
`harness.datasets.ret`: by default halueval-qa (MCQ = right answer, hallucinated answer and two other questions'
right answers; open QA = the next questions; answer-relevant = the qrels' gold passage, so gates 2 and 3 need no
manual labels), or `retail_kb` (the shipped KB: MCQ from direct queries with distractors drawn from the same
fact's values, open QA from multi-hop queries). The questions are drawn on demand: gates 3 and 4 decide in looks
(harness.stats.sequential) and stop drawing once decided; gates 1, 2, 5 and 6 read the whole study."""
from __future__ import annotations

import statistics
import time
from pathlib import Path

import numpy as np
import pytest

from harness.replay import replayed_context
from harness.data import load_experiment_inputs
from harness.retrieval.index.lancedb_store import LanceStore
from harness.parallel import LazyMap, seconds_for
from harness.retrieval import Retriever
from harness.stats import mcnemar
from harness.stats._effect import paired_effect, proportion_effect
from harness.stats.sequential import first_look
from harness.techniques.e2e4.pipelines import index_kb
from harness.techniques._registry import Services
from harness.techniques.ret.triangulation import synthesis_prompt
from harness.techniques.ret.mcq import choose, qa_study, retail_study
from harness.techniques.ret.gates import (ArmRun, added_cost_ratio, added_latency, fallback_rate,
                                         fingerprint_recall_lift, hypothesis_alignment, paired_taus, run_fell_back,
                                         top_coverage_hypothesis)
from harness.types import Query, Trace

pytestmark = [pytest.mark.benchmark, pytest.mark.rag_data("ret")]
KB = Path(__file__).resolve().parents[1] / "fixtures" / "retail_kb"
# the order the gates in looks draw their questions in (the row records it): the study's own
ORDER = {"order": "the set's order, its MCQ and open questions interleaved", "seed": None}
MCQ_ORDER = {"order": "the set's order", "seed": None}


def _run(question_id: str, correct: bool, res, q, seconds: float, trace: Trace, arm: str) -> ArmRun:
    return ArmRun(question_id, correct, [int(q.is_relevant(h)) for h in res.docs[:10]], seconds,
                  None if trace.unpriced_calls else trace.cost_usd, trace.prompt_tokens + trace.completion_tokens,
                  fell_back=run_fell_back(res, trace, ret_on=arm == "on"))


@pytest.fixture(scope="module")
def ret_study(rag_uncached_llm, rag_embedder, rag_config, rag_make_technique, rag_qa_set, rag_replay, tmp_path_factory):
    """Matched pairs, uncached: RET-GATE-6 is a latency figure and a cache hit would hide the model's time.
    Each run's wall time covers every call of the arm: retrieval, the RET calls and the choice / answer. The MCQ
    and the open questions are drawn by `harness.parallel.LazyMap`: the first look's questions of each set here, in
    the set-up the gates share (so the budget costs them once, whichever gate comes first), the rest on demand; gates
    3 and 4 decide in looks and stop drawing once decided; the others read the whole study (`ret_all`). A later run
    on the same code, configuration and model replays each question's pair as measured (`rag_replay`)."""
    from harness.techniques.backends import persistent_index

    llm = rag_uncached_llm
    n = rag_config.harness.max_queries or 10_000
    if rag_config.harness.datasets.ret == "retail_kb":
        inputs = load_experiment_inputs(KB)
        store = LanceStore(tmp_path_factory.mktemp("ret-db"), "kb")
        index_kb(inputs, store, rag_embedder)
        mcq, open_qa = retail_study(inputs, n, rag_config.harness.seed)
        dataset = "retail_kb (derived MCQ + multi-hop open QA)"
    else:
        ds = rag_qa_set("ret")
        store = persistent_index(ds, rag_embedder, rag_config)
        mcq, open_qa = qa_study(ds, n, rag_config.harness.seed)
        dataset = ds.name
    services = Services(rag_config, retriever=Retriever(store, rag_embedder), embedder=rag_embedder, llm=llm)
    # the tiny local models cannot produce RET's JSON; they get the few-shot completion prompts
    variant = "completion" if llm.label.startswith("local/") else rag_config.ret.prompt_variant
    arms = {arm: rag_make_technique("ret", services, enable_ret=arm == "on", prompt_variant=variant)
            for arm in ("off", "on")}

    def one_mcq(item) -> list[dict]:
        q, options, gold = item
        out = []
        for arm, ret in arms.items():
            trace, t0 = Trace(), time.perf_counter()
            res = ret.run(Query(q.id, q.text), trace)
            pick = choose(llm, q.text, options, res.hits, res.detail["table"], trace)
            correct = int(np.argmax(ret.score_options(res, options, pick))) == gold
            out.append({"set": "mcq", "arm": arm, "q": q, "res": res.detail["ret"], "options": options,
                        "gold_index": gold, "run": _run(q.id, correct, res.detail["ret"], q,
                                                        time.perf_counter() - t0, trace, arm)})
        return out

    def one_open(q) -> list[dict]:
        out = []
        for arm, ret in arms.items():
            trace, t0 = Trace(), time.perf_counter()
            res = ret.run(Query(q.id, q.text), trace)
            answer = llm.complete(synthesis_prompt(q.text, res.hits[:5], res.detail["table"]), max_tokens=64,
                                  trace=trace).text
            correct = q.answered_by(answer)
            out.append({"set": "open", "arm": arm, "q": q, "res": res.detail["ret"],
                        "run": _run(q.id, correct, res.detail["ret"], q, time.perf_counter() - t0, trace, arm)})
        return out

    measured: list[str] = []  # when an earlier run measured the questions replayed

    def kept(name: str, fn):
        def one(item) -> list[dict]:
            rows, when = rag_replay(name, lambda: fn(item), model=llm.label, dataset=dataset, variant=variant,
                                    question=repr(item))
            if when is not None:
                measured.append(when)
            return rows
        return one

    # questions side by side up to the client's bound (1 for the local model: its server answers one at a time);
    # each question's two arms run one after the other, so its wall time is its own
    def seconds_of(rows: list[dict]) -> float:  # both arms' wall time as measured (a replayed pair's then)
        return sum(r["run"].seconds for r in rows)

    draws = {"mcq": LazyMap(kept("ret-mcq", one_mcq), mcq, llm.concurrency, stage="ret study, MCQ (arms off/on)",
                            seconds_of=seconds_of),
             "open": LazyMap(kept("ret-open", one_open), open_qa, llm.concurrency,
                             stage="ret study, open QA (arms off/on)", seconds_of=seconds_of)}
    settings = rag_config.harness.sequential
    both = first_look(settings, max(len(mcq), len(open_qa)))  # gate 3's first look: that many of each set
    draws["mcq"].upto(max(both, first_look(settings, len(mcq))))  # gate 4's: that many MCQ
    draws["open"].upto(both)
    return {"draws": draws, "measured": measured, "model": llm.label, "prompt_variant": variant, "price": llm.price,
            "technique": arms["on"].name, "dataset": dataset}


def _drawn(ret_study, n: int | None = None, sets: tuple[str, ...] = ("mcq", "open")) -> dict:
    """The study as drawn up to the first `n` questions of each of `sets` (None: all), drawing those not yet
    drawn; the sets' questions interleaved (the first of each, the second of each, ...), so the rows of a later look
    extend those of an earlier one, as a confidence sequence's stream must."""
    draws = ret_study["draws"]
    drawn = [draws[name].upto(n if n is not None else draws[name].available) for name in sets]
    rows = [r for i in range(max(map(len, drawn), default=0)) for d in drawn if i < len(d) for r in d[i]]
    return {**ret_study, "rows": rows, "replayed_from": min(ret_study["measured"], default=None)}


def _seconds_to(ret_study, n: int | None = None) -> float | None:
    """Estimated seconds to draw the first `n` questions of each set (None: all), at the pace of those drawn."""
    maps = ret_study["draws"].values()
    return seconds_for(sum(m.seconds for m in maps), sum(m.drawn for m in maps),
                       sum(max(min(n if n is not None else m.available, m.available) - m.drawn, 0) for m in maps))


@pytest.fixture(scope="module")
def ret_all(ret_study, rag_budget_rest, request):
    """Every question of both sets drawn, for the gates read on the whole study (1, 2, 5, 6): the rest of it, asked of
    the budget where it costs more than admitted (`rag_budget_rest`), at the pace of the first look `ret_study`
    drew."""
    draws = ret_study["draws"]
    what = (f"the study has drawn {draws['mcq'].drawn} of {draws['mcq'].available} MCQ and {draws['open'].drawn} of "
            f"{draws['open'].available} open questions; these gates read all of them")
    rag_budget_rest("ret_all", f"{request.node.nodeid}::ret_all", _seconds_to(ret_study), what,
                    queries=draws["mcq"].available + draws["open"].available)
    return _drawn(ret_study)


def _arms(study, subset=None):
    rows = [r for r in study["rows"] if subset is None or r["set"] == subset]
    return [r for r in rows if r["arm"] == "off"], [r for r in rows if r["arm"] == "on"]


def _runs(study, subset=None):
    off, on = _arms(study, subset)
    return [r["run"] for r in off], [r["run"] for r in on]


def _ctx(study, **kw):
    skipped = {}
    for r in study["rows"]:
        if r["arm"] == "on" and r["res"].skip_reason:
            skipped[r["res"].skip_reason] = skipped.get(r["res"].skip_reason, 0) + 1
    on = [r for r in study["rows"] if r["arm"] == "on"]
    return {"model": study["model"], "technique": study["technique"], "dataset": study["dataset"], "ret_skips": skipped,
            "ret_skip_rate": sum(skipped.values()) / len(on) if on else float("nan"),
            "prompt_variant": study["prompt_variant"],
            **replayed_context(study["replayed_from"]), **kw}


@pytest.mark.spec("RET-GATE-3")
def test_selection_rank_correlation(ret_study, rag_check_sequential):
    rule = "tau -1 in an arm whose top 10 lost every answer-relevant passage the other kept; alike undefined: left out"
    draws = ret_study["draws"]

    def measure_at(n: int, confidence: float):  # the first n questions of each set
        study = _drawn(ret_study, n)
        tau_on, tau_off, tau_rule = paired_taus(*_runs(study))
        few = {"reason": "fewer than 2 questions with tau scored in both arms"} if len(tau_on) < 2 else {}
        effect = paired_effect(tau_on, tau_off, bounds=(-1.0, 1.0), seed=1, confidence=confidence)
        return effect, _ctx(study, tau_rule=tau_rule, scoring=rule, scored_pairs=len(tau_on),
                            tau_off=float(tau_off.mean()) if len(tau_off) else None,
                            tau_on=float(tau_on.mean()) if len(tau_on) else None,
                            fallback_rate=fallback_rate(*_runs(study)), **few)

    n_max = max(m.available for m in draws.values())  # a look at n: the first n questions of each set
    rag_check_sequential("RET-GATE-3", measure_at, n_max, cost_to=lambda n: _seconds_to(ret_study, n), order=ORDER,
                         model=ret_study["model"], dataset=ret_study["dataset"], technique=ret_study["technique"],
                         queries_available=n_max)


@pytest.mark.spec("RET-GATE-4")
def test_hypothesis_answer_alignment(ret_study, rag_check_sequential):
    def measure_at(n: int, confidence: float):  # the first n MCQ
        study = _drawn(ret_study, n, sets=("mcq",))
        _, on = _arms(study, "mcq")
        aligned, ties = [], 0
        for r in on:  # the questions RET answers correctly, where it ran (the subset the proposal names)
            res = r["res"]
            if not r["run"].correct or res.skip_reason or not res.hypotheses:
                continue
            ties += top_coverage_hypothesis(res) is None
            aligned.append(hypothesis_alignment(res, r["options"], r["gold_index"]))
        rate = float(np.mean(aligned)) if aligned else float("nan")
        return proportion_effect(aligned, confidence=confidence), _ctx(
            study, aligned_of=len(aligned), top_coverage_ties=ties,
            matching="token F1, best option, ties unmatched; a tie for the top coverage credits no hypothesis",
            flag_below_50=bool(aligned) and rate < 0.5)

    mcq = ret_study["draws"]["mcq"]
    rag_check_sequential("RET-GATE-4", measure_at, mcq.available, cost_to=mcq.seconds_to, order=MCQ_ORDER,
                         model=ret_study["model"], dataset=ret_study["dataset"], technique=ret_study["technique"],
                         queries_available=mcq.available)


@pytest.mark.spec("RET-GATE-1")
def test_accuracy_delta(ret_all, rag_check):
    off, on = _runs(ret_all, "mcq")
    a, b = np.array([r.correct for r in on]), np.array([r.correct for r in off])
    mc = mcnemar(a, b)
    o_off, o_on = _runs(ret_all, "open")
    effect = paired_effect(a.astype(float), b.astype(float), binary=True, seed=1)
    rag_check("RET-GATE-1", effect, **_ctx(ret_all, available=len(a), mcnemar_exact_p=mc.p_value,
                                       fallback_rate=fallback_rate(off, on),
                                       mcq_accuracy_off=float(b.mean()),
                                       mcq_accuracy_on=float(a.mean()),
                                       open_qa_accuracy_off=float(np.mean([r.correct for r in o_off] or [0])),
                                       open_qa_accuracy_on=float(np.mean([r.correct for r in o_on] or [0]))))


@pytest.mark.spec("RET-GATE-2")
def test_fingerprint_recall_lift(ret_all, rag_check):
    fig = fingerprint_recall_lift(*_runs(ret_all))
    rag_check("RET-GATE-2", fig.value, **_ctx(ret_all, n=fig.n, subset="questions the baseline answers wrongly",
                                          **fig.detail))


@pytest.mark.spec("RET-GATE-5")
def test_added_cost(ret_all, rag_check):
    fig = added_cost_ratio(*_runs(ret_all))
    price = ret_all["price"]
    rag_check("RET-GATE-5", fig.value, **_ctx(ret_all, n=fig.n, unit="USD",
                                          price=price.model_dump() if price else "litellm's (or none: unpriced)",
                                          ret_stage_cost_usd=sum(r["res"].ret_cost_usd for r in _arms(ret_all)[1]),
                                          **fig.detail))


@pytest.mark.spec("RET-GATE-6")
def test_added_latency(ret_all, rag_check):
    fig = added_latency(*_runs(ret_all))
    rag_check("RET-GATE-6", fig.value, **_ctx(ret_all, n=fig.n, timing="wall time of every call in both arms",
                                          median_ret_stage_s=statistics.median(r["res"].ret_seconds
                                                                               for r in _arms(ret_all)[1]),
                                          **fig.detail))
