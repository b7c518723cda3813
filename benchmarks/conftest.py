"""Benchmark-tier fixtures: every BEIR set under the data directory, indexed once into a persistent
LanceDB store under the cache directory (re-runs with warm caches encode nothing)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.plugin.state import harness_config_of


def available_datasets(data_dir: Path) -> list[str]:
    return sorted(p.name for p in data_dir.iterdir() if (p / "corpus.jsonl").exists()) if data_dir.is_dir() else []


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "dataset_name" in metafunc.fixturenames:
        h = harness_config_of(metafunc.config).harness
        # harness.datasets.retrieval names the sets; unset, every BEIR folder under the data directory
        names = list(h.datasets.retrieval) if h.datasets.retrieval is not None else available_datasets(h.data_dir)
        metafunc.parametrize("dataset_name", names or ["(no dataset)"], scope="session")
    if "judge_name" in metafunc.fixturenames:  # one verdict per judge (--judge, repeatable; default the --llm)
        h = harness_config_of(metafunc.config).harness
        metafunc.parametrize("judge_name", list(dict.fromkeys(h.judge.models)) or [h.llm.model])
    if "negatives_name" in metafunc.fixturenames:  # E2-E4 on out-of-KB questions: one verdict per set
        metafunc.parametrize("negatives_name", harness_config_of(metafunc.config).harness.datasets.negatives)


def _natural(key: str):
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", key)]


@pytest.fixture(scope="session")
def dataset(dataset_name, beir_dataset, harness_config):
    if dataset_name == "(no dataset)":
        pytest.fail(f"no BEIR dataset (a folder with corpus.jsonl) under {harness_config.harness.data_dir}", pytrace=False)
    return beir_dataset(dataset_name)


@pytest.fixture(scope="session")
def dense_store(dataset, embedder, harness_config):
    from harness.plugin.fixtures import persistent_index

    return persistent_index(dataset, embedder, harness_config)


@pytest.fixture(scope="session")
def dense_retriever(dense_store, embedder):
    from harness.retrieval import Retriever

    return Retriever(dense_store, embedder, "dense")


@pytest.fixture(scope="session")
def bench_services(dense_retriever, embedder, harness_config):
    """The services techniques are built on for this dataset (LLM and reranker made on first use)."""
    from harness.techniques.registry import Services

    return Services(harness_config, retriever=dense_retriever, embedder=embedder)


@pytest.fixture(scope="session")
def bench_queries(dataset, harness_config):
    """The first N judged queries (natural id order), N = --max-queries (0 = all)."""
    qids = sorted(dataset.judged_queries(), key=_natural)
    n = harness_config.harness.max_queries
    qids = qids[:n] if n else qids
    return [dataset.queries[q] for q in qids]


@pytest.fixture(scope="session")
def uncached_llm(llm):
    """The same model without the response cache, for latency measurements."""
    from harness import provenance

    provenance.note_model(llm.label, traffic="live")
    return llm.with_cache(None)


@pytest.fixture(scope="session")
def judge_agreement(judges, qa_set, harness_config):
    """Every judge (and the lexical baseline) on a seeded sample of HaluEval items (half right, half
    hallucinated answers, the gold passage as context), twice for LLM judges: κ, accuracy, flip rate, α.
    `harness.judge.agreement_items` of them, at most --max-queries (at least 2)."""
    from harness.judge.labelled import halueval_items
    from harness.judge.study import measure_agreement

    h = harness_config.harness
    qa = qa_set("judge")
    items = halueval_items(qa, max(2, h.capped(h.judge.agreement_items)), seed=h.seed)
    return measure_agreement(judges, items, qa.name, seed=h.judge.seed)
