"""Thin pytest fixtures over the library: configuration, spec, check and measure, retrieval (models, techniques and
record/replay: `harness.plugin.model_fixtures`); heavy imports happen inside, so `pytest -m unit` stays light."""
from __future__ import annotations

import dataclasses
import json
import math
import os
import time
from pathlib import Path
from typing import Any, Callable

import pytest

from harness.plugin.state import (
    CONTROL_KEY, PROP_RECORD, PROP_VERDICT, SpecCheckFailed, SpecInconclusive, catalogue_of, estimating,
    harness_config_of, loaded_sets, tiers_of,
)
from harness.catalogue import Catalogue, Spec
from harness.plugin.budget import budget_of
from harness.report.collector import jsonable
from harness.config import HarnessConfig
from harness.techniques.backends import crag_backends, persistent_index  # noqa: F401 - re-exported

__all__ = ["rag_spec", "rag_check", "rag_check_sequential", "rag_measure", "rag_config", "rag_catalogue", "rag_embedder",
           "rag_hashing_embedder", "rag_make_index", "rag_beir_dataset", "rag_corpus", "rag_qa_set", "rag_mcq_set", "rag_index", "rag_retriever",
           "rag_reranker"]



@pytest.fixture(scope="session")
def rag_config(pytestconfig: pytest.Config) -> HarnessConfig:
    """The run's typed configuration (wsop.yaml + command-line options)."""
    return harness_config_of(pytestconfig)


@pytest.fixture(scope="session")
def rag_catalogue(pytestconfig: pytest.Config) -> Catalogue:
    return catalogue_of(pytestconfig)


# ---------------------------------------------------------------- spec, check and measure
@pytest.fixture
def rag_spec(request: pytest.FixtureRequest) -> Spec:
    """The catalogue spec this test instance is bound to (via `@pytest.mark.spec(...)`)."""
    param = getattr(request, "param", None)
    if param is None:
        raise pytest.UsageError(f"{request.node.nodeid}: the `spec` fixture needs @pytest.mark.spec('ID')")
    return param


def _record(request: pytest.FixtureRequest, record: dict[str, Any]) -> None:
    state = request.node.stash.get(CONTROL_KEY, None)
    if state is not None:  # a run under a negative control records nothing for the report
        state["records"].append(jsonable(record))
        return
    request.node.user_properties.append((PROP_RECORD, json.dumps(jsonable(record), sort_keys=True)))


def failure_context(context: dict[str, Any]) -> str:
    """The figures a failed check's message adds (`, n=30, ci=[…], p_value=…, model=…, dataset=…`), as plain numbers;
    a figure the check did not have (None: e.g. a rate's p-value) is left out, never printed empty."""
    from harness.report.html.formatting import plain  # numbers as plain numbers, not numpy reprs

    return "".join(f", {k}={plain(context[k])}" for k in ("n", "ci", "p_value", "model", "dataset")
                   if context.get(k) is not None)


def _spec_or_fail(cat: Catalogue, spec_id: str) -> Spec:
    """The catalogue's spec, or the test fails in one line naming the id and the nearest one."""
    if spec_id in cat:
        return cat[spec_id]
    near = cat.nearest(spec_id)
    pytest.fail(f"rag-harness: spec id {spec_id!r} is not in the catalogue"
                + (f" (did you mean {near!r}?)" if near else ""), pytrace=False)


@pytest.fixture
def rag_check(request: pytest.FixtureRequest) -> Callable[..., Any]:
    """`check(spec_id, value, **context)`: decide a measured value against its catalogue spec.

    `value` is a number (or bool/list) for `decision: estimate` specs, and an `Effect`
    (`harness.stats.paired_effect` / `proportion_effect`) for `ci` and `test` specs, which get a three-valued
    verdict (supported / refuted / inconclusive) from their interval or test. A `fallback_rate` in the context
    (the share of queries where the technique fell back or failed) above 10% withholds a pass or a supported
    verdict (inconclusive: the fallback was measured), as does an n below the spec's `min_n` (the Effect's n, or
    `n=` in the context). Records value, verdict and
    context (n, ci, p_value, model, dataset, ...) for the report; refuted and failed checks fail the test,
    inconclusive ones fail it only under --strict-verdicts.
    """
    cat = catalogue_of(request.config)
    strict = bool(request.config.getoption("strict_verdicts", False))

    def _check(spec_id: str, value: Any, **context: Any) -> Any:
        from harness import provenance
        from harness.stats._effect import Effect
        from harness.stats._verdict import below_min_n, decide, decide_estimate

        s = _spec_or_fail(cat, spec_id)
        if estimating(request.config):  # the stand-in's answers are not the model's: nothing to judge
            pytest.skip(f"cost estimate run: {s.id} not judged (its LLM calls up to here are counted)")
        effect = value if isinstance(value, Effect) else None
        record: dict[str, Any] = {
            "kind": "check", "spec_id": s.id, "metric": s.metric, "comparator": s.comparator,
            "threshold": s.threshold, "tier": s.marker, "test_tier": ",".join(sorted(tiers_of(request.node))),
            "decision": dataclasses.asdict(s.decision), "nodeid": request.node.nodeid,
            "provenance": provenance.snapshot(),
        }
        if s.comparative:
            if effect is None:
                raise TypeError(f"{s.id} is decided by its {s.decision.describe()}: pass an Effect "
                                "(harness.stats.paired_effect or proportion_effect), not a bare number")
            v = below_min_n(decide(effect, s.comparator, s.threshold, s.decision,
                                   fallback_rate=context.get("fallback_rate"), error_rate=context.get("error_rate"),
                                   interim=bool(context.get("interim_look"))), effect.n, s.min_n)
            record.update(value=effect.estimate, verdict=v.verdict, effect=effect.as_context(),
                          decided=v.as_context())
        else:
            number = effect.estimate if effect is not None else value
            if isinstance(number, float) and math.isnan(number):  # the data cannot define the figure
                reason = context.get("reason") or "the measurement is undefined on this data (nan)"
                needed = context.get("queries_needed")  # where the figure names its own n (all 150 queries)
                why = (context.get("needed_for") or "the queries the figure is about" if needed else
                       "unknown: the figure is undefined on the data measured, so there is nothing to plan a study "
                       "from")
                record.update(value=number, verdict="inconclusive", decided={
                    "verdict": "inconclusive", "reason": reason, "needed_for": why,
                    **({"queries_needed": needed} if needed else {})})
            else:  # a pass measured where the technique fell back (`fallback_rate` > 10%) reads inconclusive
                v = below_min_n(decide_estimate(s.holds(number), fallback_rate=context.get("fallback_rate")),
                                effect.n if effect is not None else context.get("n"), s.min_n)
                record.update(value=number, verdict=v.verdict)
                if v.verdict == "inconclusive":
                    record["decided"] = {k: x for k, x in v.as_context().items()
                                         if k in ("verdict", "reason", "queries_needed", "needed_for") and x}
            if effect is not None:
                record["effect"] = effect.as_context()
        context = dict(context)
        param = getattr(getattr(request.node, "callspec", None), "params", {}).get("rag_dataset_name")
        if isinstance(param, str) and not context.get("dataset"):  # the set the test instance was run on
            from harness.plugin.protocol import dataset_label

            context["dataset"] = dataset_label(param)
        if context.get("judge_reliability"):
            from harness.judge.reliability import hold_on_unreliable_judge

            hold_on_unreliable_judge(record, context["judge_reliability"])
        if effect is not None:
            for k in ("n", "ci", "p_value"):
                context.setdefault(k, record["effect"][k])
        record["context"] = context
        _record(request, record)
        verdict = record["verdict"]
        if CONTROL_KEY not in request.node.stash:
            request.node.user_properties.append((PROP_VERDICT, f"{s.id}|{context.get('dataset') or ''}|{verdict}"))
        if verdict in ("pass", "supported") or (verdict == "inconclusive" and not strict):
            return value
        shown_v = record["value"]
        shown = f"{shown_v:.6g}" if isinstance(shown_v, float) and not math.isnan(shown_v) else repr(shown_v)
        extra = failure_context(context)
        head = f"{s.id} ({s.title}): measured {s.metric} = {shown}, required {s.comparator} {s.threshold!r}{extra}"
        if verdict == "inconclusive":
            raise SpecInconclusive(f"inconclusive (--strict-verdicts): {head}; {record['decided']['reason']}")
        if verdict in ("refuted", "error"):
            raise SpecCheckFailed(f"{verdict}: {head}; {record['decided']['reason']}")
        raise SpecCheckFailed(head)

    return _check


@pytest.fixture
def rag_check_sequential(request: pytest.FixtureRequest, rag_check: Callable[..., Any]) -> Callable[..., Any]:
    """`check_sequential(spec_id, measure_at, n_max, final=None, **context)`: decide a comparative claim in looks.

    `measure_at(n, confidence)` measures the claim on its first n queries and returns `(Effect, context)`, the
    Effect's interval at `confidence`; looks follow `harness.sequential` (harness.stats.sequential) and the claim
    stops at the first look whose repeated interval decides it, so queries after that are never drawn.
    `final(n)` adds context once, at the stopping look (run files, figures). The row records the looks, the one
    it stopped at, the queries used, the interval and the order the queries were drawn in (`query_order`, with its
    seed); it shows no p-value (a look's naive p is not adjusted for the looks). A claim decided by the `test` rule
    cannot be sequential (its p would be read unadjusted at every look): a TypeError. `min_n` holds inside the
    looks (a look below it cannot stop the claim as supported) and the error gate decides at an interim look only
    when the failure rate's Clopper-Pearson lower bound exceeds 10% (`harness.stats._verdict.decide`).
    `order`, where given, says in what order the queries are drawn where they are not in --query-order's (a study
    with an order of its own: `{"order": description, "seed": seed or None}`); the row records it. `cost_to(n)`,
    where given, estimates the seconds still to spend to measure n queries: for queries drawn from a study other
    claims read too (`harness.e2e4_study`), whose queries one claim may find drawn by another, the
    budget asks it, not this claim's own seconds per query, before each later look (None: no estimate yet).
    Under --estimate-cost every query is drawn (the spend's upper bound). An undecided claim stops early, as
    "futile at look k", where its last look could hardly decide it (`harness.sequential.futility`, non-binding: the
    verdict stays inconclusive, with the look's interval and the queries a new study needs).
    """
    from harness.stats.sampling import describe as describe_order
    from harness.stats.sequential import SequentialDesign, decide_in_looks

    cat = catalogue_of(request.config)
    h = harness_config_of(request.config).harness
    settings = h.sequential

    def _run(spec_id: str, measure_at: Callable[[int, float], tuple[Any, dict]], n_max: int, *,
             final: Callable[[int], dict] | None = None, cost_to: Callable[[int], float | None] | None = None,
             order: dict[str, Any] | None = None, **context: Any) -> Any:
        s = _spec_or_fail(cat, spec_id)
        if not s.comparative:
            raise TypeError(f"{s.id} is decided by its {s.decision.describe()}: only ci/test claims are sequential")
        if s.decision.rule == "test":
            raise TypeError(f"{s.id} is decided by the test rule ({s.decision.describe()}): a sequential claim would "
                            "read each look's unadjusted p-value; decide it with `decision: ci` or check it once "
                            "with rag_check")
        if n_max < 2:
            pytest.fail(f"{s.id}: {n_max} queries cannot decide a paired claim", pytrace=False)
        design = SequentialDesign((n_max,), alpha=settings.alpha) if estimating(request.config) \
            else SequentialDesign.for_claim(settings, n_max)
        last: dict[str, Any] = {}
        drawn = {"n": 0, "s": 0.0}  # queries measured so far and the seconds they took (the budget's estimate)

        def effect_at(n: int, confidence: float) -> Any:
            t0 = time.perf_counter()
            effect, ctx = measure_at(n, confidence)
            drawn.update(n=n, s=drawn["s"] + time.perf_counter() - t0)
            last.clear()
            last.update(ctx)
            return effect

        budget = budget_of(request.config)

        def may_continue(k: int, n: int, p: float | None) -> str | None:
            assert budget is not None
            shared = (cost_to(n), cost_to(design.looks[-1])) if cost_to is not None else (None, None)
            if shared[0] is not None and shared[1] is not None:  # a study other claims read too: its own estimate
                return budget.look(request.node.nodeid, shared[0], shared[1], p)
            per_query = drawn["s"] / max(drawn["n"], 1)
            return budget.look(request.node.nodeid, per_query * (n - drawn["n"]),
                               per_query * (design.looks[-1] - drawn["n"]), p)

        outcome = decide_in_looks(design, effect_at, comparator=s.comparator, threshold=s.threshold,
                                  decision=s.decision, min_n=s.min_n, settings=settings,
                                  available=context.get("available"), context=lambda: last,
                                  may_continue=may_continue if budget is not None else None)
        order = order or describe_order(h.query_order, h.seed)
        seq = {**outcome.as_context(), "query_order": order}
        extra = final(outcome.queries_used) if final is not None else {}
        # the stopping look's naive p-values are not adjusted for the looks: the row shows none
        effect = dataclasses.replace(outcome.reported_effect, p_values={}, primary_test=None)
        ctx = {k: v for k, v in {**context, **last, **extra}.items() if k != "p_value"}
        row = dict(ctx, sequential=seq, queries_used=seq["queries_used"],
                   looks_used=f"{outcome.stopped_at} of {len(design.looks)}"
                   + (", futile" if outcome.futile else ", budget" if outcome.budget_reason else ""),
                   query_order=order, interim_look=outcome.stopped_at < len(design.looks))
        if outcome.budget_reason is None:
            return rag_check(spec_id, effect, **row)
        from harness.budget import NotWithinBudget

        try:  # the row keeps the last look's interval; the test reads `budget`, not a verdict
            rag_check(spec_id, effect, **row)
        except SpecInconclusive:
            pass
        raise NotWithinBudget(f"{outcome.budget_reason} (stopped after look {outcome.stopped_at} of "
                              f"{len(design.looks)}, {outcome.queries_used} queries)", started=True)

    return _run


@pytest.fixture
def rag_measure(request: pytest.FixtureRequest) -> Callable[..., Any]:
    """`measure(name, value, **context)`: record a figure that is not itself a spec verdict."""

    def _measure(name: str, value: Any, **context: Any) -> Any:
        _record(request, {"kind": "measure", "name": name, "value": value,
                          "nodeid": request.node.nodeid, "context": context})
        return value

    return _measure


# ---------------------------------------------------------------- retrieval
@pytest.fixture(scope="session")
def rag_embedder(rag_config: HarnessConfig):
    """The configured sentence-transformers embedder (default: packaged all-MiniLM-L6-v2), disk-cached."""
    from harness.retrieval.embed import make_embedder

    from harness import provenance

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    emb = make_embedder(rag_config.harness.embedder, rag_config.harness.cache_dir)
    provenance.note_model(getattr(emb, "name", str(rag_config.harness.embedder)), traffic="local", role="embedder")
    return emb


@pytest.fixture(scope="session")
def rag_hashing_embedder():
    """A weight-free embedder for the unit tier."""
    from harness.retrieval.embed import HashingEmbedder

    return HashingEmbedder(512)


@pytest.fixture(scope="session")
def rag_make_index(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Any]:
    """`make_index(items, embedder, name=...)` -> a LanceStore on a session temp path, indexed."""
    from harness.retrieval.index.lancedb_store import LanceStore

    root = tmp_path_factory.mktemp("lancedb")

    def _make(items, embedder, name: str = "chunks", uri: str | Path | None = None):
        store = LanceStore(uri or root, name)
        store.index(items, embedder)
        return store

    return _make


def _load_set(config: pytest.Config, kind: str, path: Path) -> Any:
    """The set parsed once per session (usually at collection, by the plugin's check of the selected tests'
    data); a problem the check did not reach fails the test in one line naming file, line and field."""
    from harness.data.errors import DataError

    try:
        return loaded_sets(config).load(kind, path)
    except DataError as err:
        pytest.fail(f"rag-harness: {err}", pytrace=False)


@pytest.fixture(scope="session")
def rag_beir_dataset(pytestconfig: pytest.Config, rag_config: HarnessConfig) -> Callable[[str], Any]:
    """`beir_dataset(name)` loads `<data_dir>/<name>`; a missing dataset fails the test with its path (a claim
    that cannot be measured is an error, not a skip: deselect the test with -k or --deselect on purpose)."""

    def _load(name: str):
        path = rag_config.harness.dataset_path(name)
        if not (path / "corpus.jsonl").exists():
            pytest.fail(f"dataset {name!r} not found: {path / 'corpus.jsonl'} does not exist (set --data-dir, or "
                        "deselect this test on purpose)", pytrace=False)
        from harness import provenance
        from harness.data.qa import dataset_card

        ds = _load_set(pytestconfig, "beir", path)
        card = dataset_card(path, counts={"queries": len(ds.queries), "documents": len(ds.corpus),
                                          "judged_queries": len(ds.qrels)})
        provenance.note_dataset(ds.name, path, content_hash=card["content_hash"], card=card)
        return ds

    return _load


def _family_set(pytestconfig: pytest.Config, harness_config: HarnessConfig, family: str, loader: str,
                name: str | None = None) -> Any:
    from harness import provenance
    from harness.data import qa

    name = name or getattr(harness_config.harness.datasets, family)
    path = harness_config.harness.dataset_path(name)
    if not (path / "queries.jsonl").is_file():
        pytest.fail(f"dataset {name!r} for the {family} claims not found: {path / 'queries.jsonl'} does not exist "
                    f"(set --data-dir or harness.datasets.{family}, or deselect these tests on purpose)",
                    pytrace=False)
    ds = _load_set(pytestconfig, "qa" if loader == "load_qa" else "mcq", path)
    card = qa.qa_card(ds) if loader == "load_qa" else qa.mcq_card(ds)
    provenance.note_dataset(ds.name, path, content_hash=card["content_hash"], card=card)
    return ds


@pytest.fixture(scope="session")
def rag_qa_set(pytestconfig: pytest.Config, rag_config: HarnessConfig) -> Callable[[str], Any]:
    """`qa_set(family)`: the QA set configured for a family of claims (`harness.datasets.<family>`, e.g.
    `crag` -> halueval-qa), loaded once, its card (counts, hash, source, licence) in the report. A family set to
    a list (`negatives`) is loaded one name at a time: `qa_set("negatives", "freshqa")`."""
    loaded: dict[tuple[str, str | None], Any] = {}

    def _load(family: str, name: str | None = None) -> Any:
        if (family, name) not in loaded:
            loaded[family, name] = _family_set(pytestconfig, rag_config, family, "load_qa", name)
        return loaded[family, name]

    return _load


@pytest.fixture(scope="session")
def rag_mcq_set(pytestconfig: pytest.Config, rag_config: HarnessConfig) -> Callable[[str], Any]:
    """`mcq_set(family)`: the MCQ set configured for a family (`harness.datasets.capability` -> mmlu)."""
    return lambda family: _family_set(pytestconfig, rag_config, family, "load_mcq")


@pytest.fixture(scope="session")
def rag_corpus(rag_beir_dataset, rag_config: HarnessConfig):
    """The configured BEIR dataset (`harness.corpus` in the config, default cranfield) from the data dir."""
    return rag_beir_dataset(rag_config.harness.corpus)


@pytest.fixture(scope="session")
def rag_index(rag_corpus, rag_embedder, rag_config: HarnessConfig):
    """`corpus` embedded into a persistent LanceDB table under the cache dir (skipped when unchanged)."""
    return persistent_index(rag_corpus, rag_embedder, rag_config)


@pytest.fixture(scope="session")
def rag_retriever(rag_index, rag_embedder):
    """Dense retrieval over `index`."""
    from harness.retrieval import Retriever

    return Retriever(rag_index, rag_embedder, "dense")


@pytest.fixture(scope="session")
def rag_reranker(rag_embedder, rag_config: HarnessConfig):
    from harness.retrieval.rerank import make_reranker

    return make_reranker(rag_config.harness.reranker, rag_embedder)
