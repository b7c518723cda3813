"""Calibration of the harness's tests and intervals on real topics (issue #14): the per-topic nDCG@10 of
the harness's own dense, BM25 and hybrid runs on Cranfield's 225 topics are the population; the simulations
(`harness.stats.calibration`) are seeded and vectorised. `pytest -m benchmark -k calib` runs this module. A process
under one of these specs' statistics controls reads the runs from `fixtures/calibration/retrieval_runs.json` where
they were recorded from the same set and embedder (benchmarks/test_side_calibration.py holds the record to the live
runs)."""
from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest

from harness import provenance
from harness.data.qa import content_hash
from harness.metrics import evaluate
from harness.metrics.recorded import read_recorded, runs_key
from harness.plugin.controls import active_control, statistics_control_in_force
from harness.stats import calibration as calib
from harness.stats._effect import VERDICT_INTERVAL

pytestmark = [pytest.mark.benchmark, pytest.mark.selfcheck]  # the harness checking itself
SEED = 14
PAIRS = (("dense", "bm25"), ("dense", "hybrid"), ("bm25", "hybrid"))
TESTS = {"T": "t", "PERMUTATION": "permutation", "WILCOXON": "wilcoxon", "MCNEMAR": "mcnemar"}
RUNS = Path(__file__).resolve().parents[1] / "fixtures" / "calibration" / "retrieval_runs.json"
MODES = ("dense", "bm25", "hybrid")


@pytest.fixture(scope="module")
def topic_scores(rag_beir_dataset, rag_embedder, rag_config):
    """Per-topic nDCG@10 of the three real runs, aligned on the judged topics (under a statistics control: the
    recorded runs, where recorded from this set and embedder)."""
    from harness.techniques.backends import persistent_index
    from harness.retrieval import Retriever

    if statistics_control_in_force():
        key = runs_key("cranfield", content_hash(rag_config.harness.dataset_path("cranfield")), rag_embedder.name)
        recorded = read_recorded(RUNS, key)
        if recorded is not None:
            provenance.note_seed("calibration", SEED)
            return {mode: recorded[f"{mode}:nDCG@10"] for mode in MODES}
    ds = rag_beir_dataset("cranfield")
    store = persistent_index(ds, rag_embedder, rag_config)
    queries = sorted(ds.judged_queries().values(), key=lambda q: q.id)
    out = {}
    for mode in MODES:
        hits = Retriever(store, rag_embedder, mode).retrieve_many([q.text for q in queries], 10)
        run = {q.id: {h.id: h.score for h in hs} for q, hs in zip(queries, hits)}
        out[mode] = evaluate({q.id: ds.qrels[q.id] for q in queries}, run, ["nDCG@10"])["nDCG@10"]
    provenance.note_seed("calibration", SEED)
    return out


def _ctx(scores, **kw):
    """Context of every calibration figure (the report's calibration section selects kind='calibration')."""
    return {"kind": "calibration", "dataset": "cranfield", "topics": len(scores["dense"]),
            "runs": "dense (all-MiniLM-L6-v2), bm25, hybrid RRF", "seed": SEED, **kw}


# Urbano, Lima & Hanjalic (SIGIR 2019), type I error at alpha 0.05 with 25 topics, AP on TREC runs (their Fig. 2)
URBANO_N25 = {"t": 0.051, "permutation": (0.052, 0.053), "bootstrap-percentile": 0.069}


@pytest.fixture(scope="module")
def type1(topic_scores):
    """{n: [per-pair Type1Result]} over 3,000 A/A comparisons per pair of runs, under the copula null (new topics
    of two equally effective systems, harness.stats.calibration.copula_null_pairs); n = 25 is the sanity row
    beside Urbano et al.'s published rates, which no verdict reads (left out under a negative control)."""
    return {n: [calib.type1_rates(topic_scores[x], topic_scores[y], n=n, sims=3000, seed=SEED + i)
                for i, (x, y) in enumerate(PAIRS)] for n in ((30, 225) if active_control() else (25, 30, 225))}


@pytest.fixture(scope="module")
def type1_swap(topic_scores):
    """The same under the sign-flip null (real topics' pairs swapped), for comparison in the report; not under a
    negative control, since no verdict reads it."""
    if active_control():
        return None
    return {n: [calib.type1_rates(topic_scores[x], topic_scores[y], n=n, sims=3000, seed=SEED + i, null="swap")
                for i, (x, y) in enumerate(PAIRS)] for n in (30, 225)}


TYPE1_IDS = [f"CALIB-TYPE1-{t}-N{n}" for t in TESTS for n in (30, 225)]


@pytest.mark.spec(*TYPE1_IDS)
def test_type1_error(rag_spec, type1, type1_swap, topic_scores, rag_check, rag_measure):
    test, n = rag_spec.id.split("-")[2], int(rag_spec.id.rsplit("-N", 1)[1])
    pooled = {t: float(np.mean([r.rates[t] for r in type1[n]])) for t in calib.TYPE1_TESTS}
    if test == "T" and n == 30 and 25 in type1:  # the sanity row: our rates at n = 25 beside Urbano et al.'s published ones
        for t, rate in ((t, float(np.mean([r.rates[t] for r in type1[25]]))) for t in calib.TYPE1_TESTS):
            rag_measure(f"type1:{t}:n=25", rate, **_ctx(topic_scores, sims=3 * 3000, alpha=0.05, null="copula",
                                                    published_urbano_2019_ap_n25=URBANO_N25.get(t)))
    if test == "T":  # one test per n records every test's figures, the ones no verdict uses included
        for t in calib.TYPE1_TESTS if type1_swap is not None else ():
            rag_measure(f"type1-sign-flip-null:{t}:n={n}", float(np.mean([r.rates[t] for r in type1_swap[n]])),
                    **_ctx(topic_scores, sims=3 * 3000, alpha=0.05, null="swap (the permutation test's own null)"))
        for (x, y), r in zip(PAIRS, type1[n]):
            for t, rate in r.rates.items():
                rag_measure(f"type1:{t}:n={n}:{x}-vs-{y}", rate, **_ctx(topic_scores, sims=r.sims, alpha=r.alpha))
        for t, rate in pooled.items():
            rag_measure(f"type1:{t}:n={n}", rate, **_ctx(topic_scores, sims=3 * 3000, alpha=0.05, band=[0.035, 0.065],
                                                     in_band=0.035 <= rate <= 0.065,
                                                     used_for_verdicts=t in TESTS.values()
                                                     or t == f"bootstrap-{VERDICT_INTERVAL['difference']}"))
    rag_check(rag_spec.id, pooled[TESTS[test]], **_ctx(topic_scores, n=3 * 3000, sample_topics=n, test=TESTS[test],
                                               all_tests=pooled, null="copula (Urbano et al.: new topics of two "
                                                                        "equally effective systems)"))


def _coverage(topic_scores, n, relative):
    res = []
    for i, (x, y) in enumerate(PAIRS):
        a, b = topic_scores[x], topic_scores[y]
        if relative and a.mean() < b.mean():  # the relative effect of the better run over the worse
            a, b = b, a
        res.append(calib.coverage(a, b, n=n, relative=relative, sims=2000, seed=SEED + i))
    return res


@pytest.mark.spec("CALIB-CI-COVERAGE-N30", "CALIB-CI-COVERAGE-N225", "CALIB-CI-COVERAGE-RELATIVE-N30",
                  "CALIB-CI-COVERAGE-RELATIVE-N225")
def test_ci_coverage(rag_spec, topic_scores, rag_check, rag_measure):
    relative, n = "RELATIVE" in rag_spec.id, int(rag_spec.id.rsplit("-N", 1)[1])
    kind = "relative" if relative else "difference"
    res = _coverage(topic_scores, n, relative)
    pooled = {m: float(np.mean([r.coverage[m] for r in res])) for m in calib.INTERVALS}
    for m, v in pooled.items():
        rag_measure(f"coverage:{kind}:{m}:n={n}", v, **_ctx(topic_scores, sims=3 * 2000, band=[0.93, 0.97],
                                                        mean_width=float(np.mean([r.mean_width[m] for r in res])),
                                                        used_for_verdicts=m == VERDICT_INTERVAL[kind]))
    rag_check(rag_spec.id, pooled[VERDICT_INTERVAL[kind]], **_ctx(topic_scores, n=3 * 2000, sample_topics=n,
                                                          interval=VERDICT_INTERVAL[kind], all_intervals=pooled,
                                                          truths=[r.truth for r in res]))


@pytest.mark.spec("CALIB-POWER-PREDICTION")
def test_power_prediction(topic_scores, rag_check, rag_measure):
    results = [calib.power_at_prediction(topic_scores[x], topic_scores[y], effect, sims=1000, seed=SEED + i)
               for i, ((x, y), effect) in enumerate(itertools.product(PAIRS, (0.02, 0.05, 0.10)))]
    for (x, y), r in zip([p for p in PAIRS for _ in range(3)], results):
        rag_measure(f"power:+{r.effect:g}:{x}-vs-{y}", r.measured_power,
                **_ctx(topic_scores, predicted_n=r.predicted_n, predicted_power=r.predicted_power, sd=r.sd,
                       share=r.share, sims=r.sims))
    worst = max(abs(r.measured_power - r.predicted_power) for r in results)
    rag_check("CALIB-POWER-PREDICTION", worst, **_ctx(topic_scores, n=len(results) * 1000,
                                                  measured=[r.measured_power for r in results],
                                                  predicted_n=[r.predicted_n for r in results]))


# ---------------------------------------------------------------- the sequential rule (issue #28)
def _designs():
    from harness.stats.sequential import SequentialDesign

    return {30: SequentialDesign.plan(30), 225: SequentialDesign.plan(225)}


@pytest.mark.spec("CALIB-SEQ-TYPE1-N30", "CALIB-SEQ-TYPE1-N225")
def test_sequential_type1_error(rag_spec, topic_scores, rag_check, rag_measure):
    design = _designs()[int(rag_spec.id.rsplit("-N", 1)[1])]
    res = [calib.sequential_type1(topic_scores[x], topic_scores[y], design, sims=3000, seed=SEED + i)
           for i, (x, y) in enumerate(PAIRS)]
    rate = float(np.mean([r.rejection_rate for r in res]))
    fixed = float(np.mean([r.fixed_n_rejection_rate for r in res]))
    rag_measure(f"sequential:type1:looks={list(design.looks)}", rate,
            **_ctx(topic_scores, sims=3 * 3000, alpha=0.05, fixed_n_rate=fixed, rule=design.describe()))
    rag_check(rag_spec.id, rate, **_ctx(topic_scores, n=3 * 3000, looks=list(design.looks), bounds=list(design.bounds),
                                fixed_n_rate_at_last_look=fixed, per_pair=[r.rejection_rate for r in res],
                                null="copula (Urbano et al.: new topics of two equally effective systems)"))


@pytest.mark.spec("CALIB-SEQ-COVERAGE-N30", "CALIB-SEQ-COVERAGE-N225")
def test_sequential_coverage(rag_spec, topic_scores, rag_check, rag_measure):
    design = _designs()[int(rag_spec.id.rsplit("-N", 1)[1])]
    res = [calib.sequential_coverage(topic_scores[x], topic_scores[y], design, sims=2000, seed=SEED + i)
           for i, (x, y) in enumerate(PAIRS)]
    cov = float(np.mean([r.coverage for r in res]))
    rag_measure(f"sequential:coverage:looks={list(design.looks)}", cov,
            **_ctx(topic_scores, sims=3 * 2000, truths=[r.truth for r in res],
                   mean_queries=[r.mean_queries for r in res]))
    rag_check(rag_spec.id, cov, **_ctx(topic_scores, n=3 * 2000, looks=list(design.looks), per_pair=[r.coverage for r in res],
                               mean_queries=[r.mean_queries for r in res], truths=[r.truth for r in res]))


@pytest.mark.spec("CALIB-SEQ-QUERIES-N225")
def test_sequential_queries_used(topic_scores, rag_check, rag_measure):
    """Average queries the rule uses under planted effects (claim '> 0'), beside the fixed-n rule's power."""
    share = {}
    for n_max, design in _designs().items():
        for effect in (0.02, 0.05, 0.10):
            res = [calib.sequential_planted(topic_scores[x], topic_scores[y], design, effect, sims=2000, seed=SEED + i)
                   for i, (x, y) in enumerate(PAIRS)]
            used = float(np.mean([r.mean_queries for r in res]))
            share[(n_max, effect)] = used / n_max
            rag_measure(f"sequential:queries:+{effect:g}:n_max={n_max}", used,
                    **_ctx(topic_scores, sims=3 * 2000, looks=list(design.looks), share_of_n_max=used / n_max,
                           decided=float(np.mean([r.rejection_rate for r in res])),
                           fixed_n_decided=float(np.mean([r.fixed_n_rejection_rate for r in res])),
                           stopped_share_per_look=np.mean([r.stopped_share for r in res], axis=0).tolist()))
    rag_check("CALIB-SEQ-QUERIES-N225", share[(225, 0.10)],
          **_ctx(topic_scores, n=3 * 2000, looks=list(_designs()[225].looks),
                 all_shares={f"+{e:g}@{n}": v for (n, e), v in share.items()}))
