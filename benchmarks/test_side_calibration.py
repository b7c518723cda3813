"""Per-side calibration of sequential verdicts (issue 36): the truth set exactly at each claim kind's threshold on real
per-query scores, false "supported" and false "refuted" counted separately per look and overall, the coverage of the
interval a claim stops with, and the truth 0.5, 1 and 2 MDEs either side for power; before (main's intervals on the
repeated-interval design) and after (the betting confidence sequence on the anytime design), with the candidates the
choice was made among. `harness.stats.calibration_sides` runs the vectorised copies of the production path
(`tests/test_calibration_sides_equal.py` proves them equal). `pytest -m benchmark benchmarks/test_side_calibration.py`.

Populations: the harness's own dense, BM25 and hybrid runs on Cranfield (225 topics) and on a seeded sample of 3,000
halueval-qa questions (one gold passage each), the recorded per-query scores of the protocol's own claims
(SmolLM2, 30 queries each: `fixtures/sequential/smollm2-fixed30.json`), and for Cohen's κ (JUDGE-KAPPA, decided in
looks since issue 37) the lexical baseline's rulings on 3,000 seeded HaluEval items and SmolLM2's recorded rulings on 400
(`fixtures/calibration/judge_rulings.json`). A process under one of the statistics
controls these specs name reads the retrieval runs from `fixtures/calibration/retrieval_runs.json` where they were
recorded from the very same sets, embedder and sample (the control breaks the statistics, not the retrieval, so
indexing and searching the sets again would only recompute the same numbers); the real run computes them live and
`test_the_recorded_runs_are_the_live_ones` holds the record to them (`RAG_HARNESS_RECORD_RUNS=1` records them anew).
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Callable

import numpy as np
import pytest

from harness import provenance
from harness.data.qa import content_hash
from harness.metrics.recorded import read_recorded, runs_key, write_recorded
from harness.plugin.controls import statistics_control_in_force
from harness.stats import calibration_sides as sides

pytestmark = [pytest.mark.benchmark, pytest.mark.selfcheck]  # the harness checking itself
SEED = 36
DESIGNS = {30: (10, 20, 30), 225: (45, 90, 135, 180, 225)}
SIMS = 4000  # per population and design with the truth at the threshold: MC SE 0.0025 at a 0.025 rate
POWER_SIMS = 1000
SHIFTS = (-2.0, -1.0, -0.5, 0.5, 1.0, 2.0)  # the truth in MDEs from the threshold
LIMIT = sides.NOMINAL_SIDE + 2 * sides.side_se(SIMS)  # 0.0299
RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "sequential" / "smollm2-fixed30.json"
KIND_OF_SPEC = {"DIFFERENCE": "difference", "RELATIVE": "relative", "BINARY": "binary", "RATE": "proportion",
                "KAPPA": "kappa"}
KAPPA_ITEMS = 3000  # seeded HaluEval items (half right, half hallucinated answers), as JUDGE-KAPPA's study draws them
JUDGE_RULINGS = Path(__file__).resolve().parents[1] / "fixtures" / "calibration" / "judge_rulings.json"
RUNS = Path(__file__).resolve().parents[1] / "fixtures" / "calibration" / "retrieval_runs.json"
SETS = {"cranfield": None, "halueval-qa": 3000}  # each set's judged queries the runs take: all, or a seeded sample


def _runs(ds, embedder, config, sample: int | None) -> dict[str, np.ndarray]:
    """Per-query nDCG@10 and Recall@10 of the dense, BM25 and hybrid runs (a seeded sample of the judged queries)."""
    from harness.metrics import evaluate
    from harness.retrieval import Retriever
    from harness.techniques.backends import persistent_index

    store = persistent_index(ds, embedder, config)
    queries = sorted(ds.judged_queries().values(), key=lambda q: q.id)
    if sample and sample < len(queries):
        keep = np.random.default_rng(SEED).choice(len(queries), sample, replace=False)
        queries = [queries[i] for i in sorted(keep)]
    out = {}
    for mode in ("dense", "bm25", "hybrid"):
        hits = Retriever(store, embedder, mode).retrieve_many([q.text for q in queries], 10)
        run = {q.id: {h.id: h.score for h in hs} for q, hs in zip(queries, hits)}
        scores = evaluate({q.id: ds.qrels[q.id] for q in queries}, run, ["nDCG@10", "Recall@10"])
        out.update({f"{mode}:{m}": np.asarray(v, dtype=float) for m, v in scores.items()})
    return out


def runs_key_of(name: str, sample: int | None, embedder_name: str, config) -> dict:
    """What a set's runs are computed from: its content, the embedder and the queries taken."""
    return runs_key(name, content_hash(config.harness.dataset_path(name)), embedder_name, sample=sample,
                    seed=SEED if sample else None)


@pytest.fixture(scope="module")
def runs(rag_beir_dataset, rag_embedder, rag_config) -> dict[str, dict[str, np.ndarray]]:
    """Each set's per-query runs (`_runs`): live; under a statistics control, the recorded ones where they were
    recorded from this very set, embedder and sample."""
    out = {}
    for name, sample in SETS.items():
        recorded = None
        if statistics_control_in_force():
            recorded = read_recorded(RUNS, runs_key_of(name, sample, rag_embedder.name, rag_config))
        out[name] = recorded if recorded is not None else _runs(rag_beir_dataset(name), rag_embedder, rag_config,
                                                                sample)
    return out


@pytest.fixture(scope="module")
def kappa_rulings(rag_qa_set) -> dict[str, tuple[list, list]]:
    """Real judges' rulings on JUDGE-KAPPA's kind of items, with the items' labels: the lexical baseline (no model) on
    a seeded sample of `KAPPA_ITEMS` HaluEval items, and each recorded LLM judge's first rulings
    (`fixtures/calibration/judge_rulings.json`, `benchmarks/record_judge_rulings.py`: failed rulings included, a
    third value of the contrast). A judge that never fails, on labels half and half, has κ = 2·agreement − 1: at the
    threshold every such judge is the same population (agreement 0.7), so one lexical judge stands for all of them."""
    from harness.judge import LexicalJudge
    from harness.judge.labelled import halueval_items

    items = halueval_items(rag_qa_set("judge"), KAPPA_ITEMS, seed=SEED)
    out = {"lexical": ([LexicalJudge().supported(i.item) for i in items], [i.supported for i in items])}
    for judge, rec in json.loads(JUDGE_RULINGS.read_text())["judges"].items():
        out[f"{judge} (recorded, {rec['items']} items)"] = (rec["verdicts"], rec["labels"])
    return out


@pytest.fixture(scope="module")
def kappa_populations(kappa_rulings) -> list[tuple[sides.Population, str, float]]:
    """JUDGE-KAPPA's claim (κ >= 0.4, labels half and half) on each real judge's rulings."""
    return [(sides.kappa_population(f"halueval-qa κ {name}", verdicts, labels), ">=", 0.4)
            for name, (verdicts, labels) in kappa_rulings.items()]


@pytest.fixture(scope="module")
def populations(runs) -> list[tuple[sides.Population, str, float]]:
    """(population, comparator, threshold) of every claim kind on every real population."""
    cr, hq = runs["cranfield"], runs["halueval-qa"]
    provenance.note_seed("calibration-sides", SEED)
    P = sides.Population
    out: list[tuple[sides.Population, str, float]] = []
    for name, s in (("cranfield", cr), ("halueval-qa", hq)):
        for arm in ("hybrid", "bm25"):
            out.append((P(f"{name} nDCG@10 {arm} - dense", "difference", s[f"{arm}:nDCG@10"], s["dense:nDCG@10"]),
                        ">", 0.0))
            out.append((P(f"{name} Recall@10 {arm} / dense", "relative", s[f"{arm}:Recall@10"],
                          s["dense:Recall@10"]), ">=", 0.05))
    for arm in ("hybrid", "bm25"):  # paired 0/1 outcomes: the gold passage in the top 10; Recall@10 >= 0.5
        out.append((P(f"halueval-qa Hit@10 {arm} - dense", "binary", hq[f"{arm}:Recall@10"], hq["dense:Recall@10"]),
                    ">=", 0.05))
        out.append((P(f"cranfield Recall@10>=0.5 {arm} - dense", "binary", (cr[f"{arm}:Recall@10"] >= 0.5) * 1.0,
                      (cr["dense:Recall@10"] >= 0.5) * 1.0), ">=", 0.05))
    out.append((P("halueval-qa dense Hit@10 (rate)", "proportion", hq["dense:Recall@10"]), ">=", 0.95))
    out.append((P("cranfield hybrid Recall@10>=0.5 (rate, at chance)", "proportion",
                  (cr["hybrid:Recall@10"] >= 0.5) * 1.0), ">=", 0.5))
    for c in json.loads(RECORDED.read_text())["claims"]:  # the protocol's own claims, SmolLM2, 30 queries
        kind = "relative" if c["relative"] else "binary" if c["binary"] else "difference"
        out.append((P(f"{c['spec_id']} {c['dataset']} (SmolLM2)", kind, np.array(c["candidate"], float),
                      np.array(c["baseline"], float)), c["comparator"], c["threshold"]))
    return out


def _reachable(pop: sides.Population, truth: float) -> bool:
    try:
        sides.truth_weights(pop, truth)
        return True
    except ValueError:
        return False


class Studies:
    """The studies of each claim kind, run on first use (a run under a control computes only the kinds its specs
    read, and only what their verdicts read: the rule in use ("after"), not the others' figures or power):
    `rows(kind, n_max)` is
    [(population, shape, {rule: SideResult}, {rule: {shift: P(right verdict)}}, MDE)]; `unreachable` names the
    populations whose values cannot reach their threshold (every query on one side of it)."""

    def __init__(self, populations_of: Callable[[str], list[tuple[sides.Population, str, float]]]) -> None:
        self.populations_of = populations_of  # a kind's populations (κ's: real judges' rulings)
        self.unreachable: dict[str, list[str]] = {}
        self._rows: dict[tuple[str, int], list] = {}

    def rows(self, kind: str, n_max: int) -> list:
        if (kind, n_max) not in self._rows:
            self._run(kind)
        return self._rows[(kind, n_max)]

    def _run(self, kind: str) -> None:
        from harness.control_env import active_control

        for n_max in DESIGNS:
            self._rows[(kind, n_max)] = []
        for i, (pop, comparator, threshold) in enumerate(self.populations_of(kind)):
            if pop.kind != kind:
                continue
            if not _reachable(pop, threshold):
                self.unreachable.setdefault(kind, []).append(pop.name)
                continue
            shape = sides.shape(pop, threshold)
            figures_only = not active_control()  # the rules no verdict reads, beside the one in use
            for n_max, looks in DESIGNS.items():
                res = {rule: sides.side_study(pop, looks, threshold, rule=rule, comparator=comparator, sims=SIMS,
                                              seed=SEED + i)
                       for rule in (("before", "after", "t", "hall") if figures_only else ("after",))
                       if _has_rule(rule, kind)}
                if n_max == 30 and figures_only and _has_rule("t", kind):  # a later first look: t at looks 20, 30
                    res["t-first-look-20"] = sides.side_study(pop, (20, 30), threshold, rule="t", comparator=comparator,
                                                              sims=SIMS, seed=SEED + i)
                step = sides.mde(pop, threshold, n_max)
                power: dict[str, dict[float, float]] = {}
                for rule in ("before", "after") if figures_only else ():
                    power[rule] = {}
                    for k in SHIFTS:
                        if _reachable(pop, threshold + k * step):
                            r = sides.side_study(pop, looks, threshold, rule=rule, comparator=comparator,
                                                 truth=threshold + k * step, sims=POWER_SIMS, seed=SEED + 100 + i)
                            power[rule][k] = r.false_supported if k > 0 else r.false_refuted
                self._rows[(kind, n_max)].append((pop, shape, res, power, step))


def _has_rule(rule: str, kind: str) -> bool:
    try:
        sides.rule_of(rule, kind)
        return True
    except KeyError:
        return False


@pytest.fixture(scope="module")
def studies(populations, kappa_populations) -> Studies:
    return Studies(lambda kind: kappa_populations if kind == "kappa" else populations)


def _ctx(**kw):
    return {"kind": "calibration", "sims": SIMS, "seed": SEED, "mc_se": sides.side_se(SIMS), **kw}


SIDE_IDS = [f"CALIB-SIDES-{k}-N{n}" for k in KIND_OF_SPEC for n in DESIGNS]


@pytest.mark.spec(*SIDE_IDS)
def test_each_side_held_at_the_threshold(rag_spec, studies, rag_check, rag_measure):
    kind, n_max = KIND_OF_SPEC[rag_spec.id.split("-")[2]], int(rag_spec.id.rsplit("-N", 1)[1])
    rows = studies.rows(kind, n_max)
    for pop, shape, res, power, step in rows:
        for rule, r in res.items():
            rag_measure(f"sides:{kind}:n={n_max}:{pop.name}:{rule}", max(r.false_supported, r.false_refuted),
                        **_ctx(**r.as_context(), **shape, used_for_verdicts=rule == "after"))
        for rule, by_shift in power.items():
            for k, p in by_shift.items():
                rag_measure(f"sides-power:{kind}:n={n_max}:{pop.name}:{rule}:{k:+g} MDE", p,
                            **_ctx(sims=POWER_SIMS, mde=step, truth_in_mdes=k, right_verdict=
                                   "supported" if k > 0 else "refuted"))
    worst = max(max(res["after"].false_supported, res["after"].false_refuted) for _, _, res, _, _ in rows)
    rag_check(rag_spec.id, worst, **_ctx(n=len(rows) * SIMS, looks=list(DESIGNS[n_max]), limit=LIMIT,
                                         unreachable=studies.unreachable.get(kind, []),
                                         per_population={p.name: [res["after"].false_supported,
                                                                  res["after"].false_refuted]
                                                         for p, _, res, _, _ in rows},
                                         before={p.name: [res["before"].false_supported, res["before"].false_refuted]
                                                 for p, _, res, _, _ in rows if "before" in res}))


@pytest.mark.spec("CALIB-SIDES-COVERAGE-N30", "CALIB-SIDES-COVERAGE-N225")
def test_the_stopping_interval_covers_the_truth(rag_spec, studies, rag_check):
    n_max = int(rag_spec.id.rsplit("-N", 1)[1])
    rows = [(kind, r) for kind in sides.KINDS for r in studies.rows(kind, n_max)]
    cov = {f"{kind}:{pop.name}": res["after"].coverage for kind, (pop, _, res, _, _) in rows}
    before = {f"{kind}:{pop.name}": res["before"].coverage for kind, (pop, _, res, _, _) in rows if "before" in res}
    rag_check(rag_spec.id, min(cov.values()), **_ctx(n=len(cov) * SIMS, per_population=cov, before=before))


@pytest.mark.spec("CALIB-ERROR-GATE-N30")
def test_the_error_gate_does_not_peek(rag_check, rag_measure):
    looks, sims = DESIGNS[30], 20000
    rate = sides.error_gate_rate(0.05, looks, sims=sims, seed=SEED)
    fixed = sides.fixed_n_error_rate(0.05, 30)
    for n_max, lk in DESIGNS.items():
        rag_measure(f"error-gate:n={n_max}", sides.error_gate_rate(0.05, lk, sims=sims, seed=SEED),
                    **_ctx(sims=sims, failure_rate=0.05, fixed_n_rate=sides.fixed_n_error_rate(0.05, n_max),
                           every_look_rate=sides.error_gate_rate(0.05, lk, every_look=True, sims=sims, seed=SEED)))
    rag_check("CALIB-ERROR-GATE-N30", rate, **_ctx(n=sims, sims=sims, looks=list(looks), failure_rate=0.05,
                                                   fixed_n_rate=fixed, mc_se=float(np.sqrt(fixed * (1 - fixed) / sims))))


def test_the_recorded_runs_are_the_live_ones(runs, rag_embedder, rag_config):
    """The record a statistics control's process reads is today's live runs, value for value (the real run computes
    them live; `RAG_HARNESS_RECORD_RUNS=1` records them anew, then this test compares what it wrote)."""
    if statistics_control_in_force():
        pytest.skip("under a statistics control the runs may come from the record itself")
    for name, sample in SETS.items():
        key = runs_key_of(name, sample, rag_embedder.name, rag_config)
        if os.environ.get("RAG_HARNESS_RECORD_RUNS"):
            write_recorded(RUNS, key, runs[name], source=(
                "per-query nDCG@10 and Recall@10 of the harness's own dense, BM25 and hybrid RRF runs, top 10, as "
                "benchmarks/test_side_calibration.py computes them live (`_runs`); read by the processes of the "
                "statistics controls of the calibration specs (benchmarks/test_side_calibration.py, "
                "benchmarks/test_calibration.py), whose key must match the set's content, the embedder and the "
                "queries; RAG_HARNESS_RECORD_RUNS=1 pytest -m benchmark benchmarks/test_side_calibration.py -k "
                "recorded records them anew"))
        recorded = read_recorded(RUNS, key)
        assert recorded is not None, f"{RUNS} holds no {name} runs recorded from {key} (RAG_HARNESS_RECORD_RUNS=1)"
        assert sorted(recorded) == sorted(runs[name])
        differ = [m for m in runs[name] if not np.array_equal(recorded[m], runs[name][m])]
        assert not differ, f"{name}: the recorded {differ} are not today's live runs (RAG_HARNESS_RECORD_RUNS=1)"
