"""The Ray path (issue #29 item 5, harness.retrieval.index.ray_ingest): a corpus encoded by a Ray Data actor pool
and written to Lance from the workers gives the single-process table (same ids, each passage once, vectors to
cosine >= 0.99999), marked complete so the benchmark tier opens it by URI and encodes nothing."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from harness.config import HarnessSettings, load_config
from harness.data.beir import iter_corpus, load_beir
from harness.retrieval.embed import HashingEmbedder, NoCache
from harness._probes.ingest import write_corpus
from harness.retrieval.index.lancedb_store import LanceStore
from harness.retrieval.index.ray_ingest import RayIngestStats, table_uri
from harness.retrieval.index.rows import Fingerprint, as_rows, content_fingerprint
from harness.types import Document

pytest_plugins = ["pytester"]
QUIET = pytest.mark.filterwarnings("ignore:lance is not fork-safe:UserWarning")


# ---------------------------------------------------------------- unit: no Ray needed
@pytest.mark.unit
def test_fingerprint_fed_in_parts_is_the_single_process_fingerprint():
    docs = [Document(id=f"d{i}", text=f"text {i}", title="T" if i % 2 else "", metadata={"k": i}) for i in range(7)]
    fp = Fingerprint("hashing-64")
    fp.update(as_rows(docs[:3]))
    fp.update(as_rows(docs[3:]))
    assert fp.hexdigest() == content_fingerprint("hashing-64", as_rows(docs))
    h = hashlib.sha256(b"hashing-64")  # by hand: the digest tables indexed before are marked with
    for d in docs:
        meta = json.dumps({"title": d.title, **d.metadata}, sort_keys=True)
        h.update(b"\x00" + d.id.encode() + b"\x01" + d.full_text.encode() + b"\x02" + meta.encode())
    assert fp.hexdigest() == h.hexdigest()
    other = Fingerprint("hashing-64")
    other.update(as_rows(docs[:6]))  # a passage short: another table
    assert other.hexdigest() != fp.hexdigest()


@pytest.mark.unit
def test_throughput_figures_by_hand():
    st = RayIngestStats(rows=300, workers=2, pipeline_seconds=6.0, index_seconds=1.0)
    assert st.passages_per_s == 50.0 and st.per_worker == 25.0


@pytest.mark.unit
def test_index_location_extends_the_cache_dir_default(tmp_path):
    h = HarnessSettings(cache_dir=tmp_path)
    assert h.index_db("cranfield") == str(tmp_path / "lancedb" / "cranfield")
    h = load_config(**{"harness.index_uri": "s3://bucket/rag/", "harness.index_storage_options": {"region": "x"}}).harness
    assert h.index_db("cranfield") == "s3://bucket/rag/cranfield" and h.index_storage_options == {"region": "x"}
    assert table_uri(LanceStore(tmp_path / "db", "corpus")) == f"{tmp_path / 'db'}/corpus.lance"


@pytest.mark.integration
@pytest.mark.parametrize("uri, expected", [("idx", "{root}/idx/d"), ("s3://b/x", "s3://b/x/d")])
def test_a_relative_index_uri_is_the_projects(pytester, uri, expected):
    """The plugin resolves a relative `harness.index_uri` against the project's root, as it does cache_dir; an
    object-store URI is kept as written."""
    from tests.pytester_kit import new_project

    new_project(pytester, "specs: []\n")
    (pytester.path / "cfg.yaml").write_text(f"harness:\n  index_uri: {uri}\n", encoding="utf-8")
    pytester.makepyfile(test_where=f"""
        import pytest

        @pytest.mark.unit
        def test_where(rag_config):
            assert rag_config.harness.index_db("d") == {expected.format(root=pytester.path)!r}
    """)
    pytester.runpytest_subprocess("--harness-config", "cfg.yaml", "-m", "unit").assert_outcomes(passed=1)


# ---------------------------------------------------------------- integration: a local Ray with 2 CPUs
@pytest.fixture(scope="module")
def ray_local():
    pytest.importorskip("ray.data", reason="ray is not installed: pip install 'pytest-rag-harness[ray]'")
    pytest.importorskip("lance_ray", reason="lance-ray is not installed: pip install 'pytest-rag-harness[ray]'")
    from harness.retrieval.index.ray_ingest import start_ray

    ray = start_ray(num_cpus=2)
    yield ray
    ray.shutdown()


def _by_id(store: LanceStore) -> dict[str, np.ndarray]:
    ids, vecs = store.vectors()
    assert len(ids) == len(set(ids)), "a passage is in the table more than once"
    return dict(zip(ids, vecs))


def _assert_same_table(ray_store: LanceStore, one_store: LanceStore, n: int) -> float:
    got, want = _by_id(ray_store), _by_id(one_store)
    assert len(want) == n and set(got) == set(want)
    worst = min(float(got[i] @ want[i] / (np.linalg.norm(got[i]) * np.linalg.norm(want[i]))) for i in want)
    assert worst >= 0.99999, worst
    texts = dict(zip(*[ray_store.table.to_arrow().column(c).to_pylist() for c in ("id", "text")]))
    assert texts == dict(zip(*[one_store.table.to_arrow().column(c).to_pylist() for c in ("id", "text")]))
    assert ray_store.stored_fingerprint() == one_store.stored_fingerprint()  # complete, with the same fingerprint
    return worst


@pytest.mark.integration
@QUIET
@pytest.mark.parametrize("name, n, batch", [("hashing-384", 300, 64), ("all-MiniLM-L6-v2-onnx-int8", 24, 6)])
def test_ray_table_equals_the_single_process_table(ray_local, tmp_path, name, n, batch):
    from harness.retrieval.index.ray_ingest import ray_index_corpus, worker_embedder

    write_corpus(tmp_path / "corpus.jsonl", n)
    emb = worker_embedder(name)
    ray_store = LanceStore(tmp_path / "ray", "corpus")
    st = ray_index_corpus(tmp_path / "corpus.jsonl", ray_store, name, emb.dim, workers=2, batch=batch)
    assert st.rows == n and st.workers == 2
    one_store = LanceStore(tmp_path / "one", "corpus")
    one_store.index(list(iter_corpus(tmp_path / "corpus.jsonl")), emb)
    _assert_same_table(ray_store, one_store, n)
    again = LanceStore(tmp_path / "ray", "corpus").index(list(iter_corpus(tmp_path / "corpus.jsonl")), emb)
    assert again.skipped and again.encoded == 0  # the single-process path finds the Ray table complete


@pytest.mark.integration
@QUIET
def test_ray_index_command_writes_the_table_the_tier_opens(ray_local, tmp_path, capsys):
    from harness.cli import main
    from harness.techniques.backends import persistent_index

    data = tmp_path / "data" / "mini"
    (data / "qrels").mkdir(parents=True)
    write_corpus(data / "corpus.jsonl", 120)
    (data / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "w1 w2"}) + "\n", encoding="utf-8")
    (data / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\tp3\t1\n", encoding="utf-8")
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(yaml.safe_dump({"harness": {"embedder": "hashing-384", "data_dir": str(tmp_path / "data"),
                                               "index_uri": str(tmp_path / "idx")}}), encoding="utf-8")
    assert main(["ray-index", "mini", "--config", str(cfg), "--workers", "2", "--batch", "32"]) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert out["rows"] == 120 and out["table"] == f"{tmp_path / 'idx'}/mini/corpus"
    assert Path(tmp_path / "idx" / "mini" / "corpus.lance").is_dir()
    hc = load_config(cfg)
    emb = HashingEmbedder(384, cache=NoCache())
    store = persistent_index(load_beir(data), emb, hc)  # the benchmark tier's own opening of the index
    assert store.last_stats.skipped and store.last_stats.encoded == 0 and len(store) == 120
    one = LanceStore(tmp_path / "one", "corpus")
    one.index(list(iter_corpus(data / "corpus.jsonl")), emb)
    _assert_same_table(store, one, 120)
