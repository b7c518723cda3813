"""Benchmark-tier fixtures of the protocol's claims: each configured BEIR set, indexed once into a persistent
LanceDB store under the cache directory (re-runs with warm caches encode nothing), its queries, and the
services the techniques are built on. Their parametrisation (`rag_dataset_name`, `rag_judge_name`,
`rag_negatives_name`) is `harness.plugin.protocol.parametrize`, called from the plugin's hooks."""
from __future__ import annotations

from typing import Any

import pytest

__all__ = ["rag_dataset", "rag_dense_store", "rag_dense_retriever", "rag_bench_services", "rag_bench_queries",
           "rag_uncached_llm", "rag_judge_draws", "rag_judge_agreement", "rag_kb", "rag_replay", "rag_budget_rest"]


@pytest.fixture(scope="session")
def rag_dataset(rag_dataset_name: str, rag_beir_dataset: Any, rag_config: Any) -> Any:
    """The BEIR set this test instance measures (one instance per set of `harness.datasets.retrieval`)."""
    from harness.plugin.protocol import NO_DATASET

    if rag_dataset_name == NO_DATASET:
        pytest.fail(f"no BEIR dataset (a folder with corpus.jsonl) under {rag_config.harness.data_dir}: set "
                    "harness.datasets.retrieval or --data-dir", pytrace=False)
    return rag_beir_dataset(rag_dataset_name)


@pytest.fixture(scope="session")
def rag_dense_store(rag_dataset: Any, rag_embedder: Any, rag_config: Any) -> Any:
    from harness.techniques.backends import persistent_index

    return persistent_index(rag_dataset, rag_embedder, rag_config)


@pytest.fixture(scope="session")
def rag_dense_retriever(rag_dense_store: Any, rag_embedder: Any) -> Any:
    from harness.retrieval import Retriever

    return Retriever(rag_dense_store, rag_embedder, "dense")


@pytest.fixture(scope="session")
def rag_bench_services(rag_dense_retriever: Any, rag_embedder: Any, rag_config: Any) -> Any:
    """The services techniques are built on for this dataset (LLM and reranker made on first use)."""
    from harness.techniques._registry import Services

    return Services(rag_config, retriever=rag_dense_retriever, embedder=rag_embedder)


@pytest.fixture(scope="session")
def rag_bench_queries(rag_dataset: Any, rag_config: Any) -> list[Any]:
    """N judged queries, N = --max-queries (0 = all), in --query-order: a permutation seeded by harness.seed
    (default), so each look of a claim is a random sample, or natural id order; every arm of a dataset draws the same
    order (`harness.stats.sampling.ordered`)."""
    from harness.stats.sampling import ordered

    h = rag_config.harness
    qids = ordered(list(rag_dataset.judged_queries()), h.query_order, h.seed)
    n = h.max_queries
    qids = qids[:n] if n else qids
    return [rag_dataset.queries[q] for q in qids]


@pytest.fixture(scope="session")
def rag_uncached_llm(rag_llm: Any) -> Any:
    """The same model without the response cache, for latency measurements."""
    from harness import provenance

    provenance.note_model(rag_llm.label, traffic="live")
    return rag_llm.with_cache(None)


@pytest.fixture(scope="session")
def rag_budget_rest(pytestconfig: pytest.Config) -> Any:
    """`budget_rest(fixture, key, need_s, what, queries=None)`: before a study drawn in looks draws its rest in the
    set-up of the wider fixture `fixture`, ask the run's budget (--budget) for what the rest costs past that set-up's
    seconds as last measured (`harness.plugin.budget.ask_for_rest`); refused, `NotWithinBudget` (the claims read
    "not decided within the budget"). Without a budget it asks nothing."""
    from harness.plugin.budget import ask_for_rest

    def _ask(fixture: str, key: str, need_s: float | None, what: str, *, queries: int | None = None) -> None:
        ask_for_rest(pytestconfig, fixture, key, need_s, what, queries=queries)

    return _ask


@pytest.fixture(scope="session")
def rag_replay(rag_config: Any, pytestconfig: pytest.Config) -> Any:
    """What earlier runs drew from the model on this code and configuration (`harness.replay.Replay`): a study or
    an uncached measurement asks it first, and calls the model only for what no earlier run measured."""
    from harness.plugin.state import REPLAY_KEY
    from harness.replay import Replay

    h = rag_config.harness
    settings = rag_config.model_dump(mode="json")
    for where in ("report_dir", "cache_dir"):  # where things are written changes no figure
        settings.get("harness", {}).pop(where, None)
    replay = Replay(h.cache_dir / "replay" if h.llm.cache else None, {"config": settings})
    pytestconfig.stash[REPLAY_KEY] = replay
    return replay


@pytest.fixture(scope="session")
def rag_judge_draws(rag_judges: Any, rag_qa_set: Any, rag_config: Any, rag_replay: Any) -> Any:
    """Every judge (and the lexical baseline) on a seeded sample of HaluEval items (half right, half hallucinated
    answers, the gold passage as context), twice for LLM judges, drawn item by item on demand
    (`harness.judge.study.AgreementDraws`): the first look's items here, in the set-up its claims share (so the
    budget costs them once, whichever claim comes first), the rest as claims read them. `harness.judge.agreement_items`
    items, at most --max-queries (at least 2). A later run on the same code, configuration and model replays each
    item's rulings as measured (`rag_replay`)."""
    from harness.judge.labelled import halueval_items
    from harness.judge.study import AgreementDraws, with_lexical
    from harness.stats.sequential import first_look

    h = rag_config.harness
    qa = rag_qa_set("judge")
    items = halueval_items(qa, max(2, h.capped(h.judge.agreement_items)), seed=h.seed)
    judges = with_lexical(rag_judges)

    def keep(compute: Any, item: Any) -> Any:
        return rag_replay("judge-item", compute, judges=[j.name for j in judges], labelled_set=qa.name,
                          seed=h.judge.seed, item=repr(item))

    draws = AgreementDraws(judges, items, qa.name, seed=h.judge.seed, keep=keep)
    draws.draws.upto(first_look(h.sequential, len(items)))
    return draws


@pytest.fixture(scope="session")
def rag_judge_agreement(rag_judge_draws: Any, rag_budget_rest: Any, request: pytest.FixtureRequest) -> Any:
    """The agreement study over every item (`harness.judge.study.AgreementStudy`: κ, accuracy, flip rate, α), for
    the claims that read all of them: the rest of `rag_judge_draws`, asked of the budget where it costs more than
    admitted (`rag_budget_rest`), at the pace of the first look `rag_judge_draws` drew."""
    draws = rag_judge_draws.draws
    rag_budget_rest("rag_judge_agreement", f"{request.node.nodeid}::rag_judge_agreement",
                    draws.seconds_to(draws.available),
                    f"the judges have ruled on {draws.drawn} of {draws.available} items; these claims read all of them",
                    queries=draws.available)
    study = rag_judge_draws.study_at(draws.available)
    study.note_provenance()
    return study


@pytest.fixture(scope="session")
def rag_kb(rag_config: Any) -> Any:
    """The E2-E4 knowledge base (`harness.datasets.kb`): a folder of pages with `structure.json` and
    `queries.jsonl`; by default the synthetic retail KB, written once under the cache directory."""
    from harness.data.retail_kb import resolve_kb

    h = rag_config.harness
    path = resolve_kb(h.datasets.kb or "retail_kb", h.data_dir, h.cache_dir)
    if not (path / "structure.json").is_file():
        pytest.fail(f"knowledge base {h.datasets.kb!r} not found: {path / 'structure.json'} does not exist (set "
                    "harness.datasets.kb to a folder of pages with structure.json and queries.jsonl)", pytrace=False)
    return path
