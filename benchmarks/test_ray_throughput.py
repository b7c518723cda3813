"""Encoding throughput of the Ray path (issue #29 item 5) at 1 and 2 workers: `ray_index_corpus` over the same
seeded corpus (400 passages of ~60 words, `harness._probes.ingest.write_corpus`) with the default
int8 ONNX embedder, one actor per CPU with one ONNX thread each, on a local Ray of 2 CPUs. Passages/s is over the
Ray pipeline's wall time (actor start-up, encoding, the workers' Lance writes), one run each. Opt-in:
`pytest -m benchmark benchmarks/test_ray_throughput.py --machine-benchmarks` (needs `.[ray]`)."""
from __future__ import annotations

import pytest

from harness.retrieval.embed import ONNX_INT8_MINILM
from harness._probes.ingest import write_corpus
from harness.retrieval.index.lancedb_store import LanceStore

pytestmark = [pytest.mark.benchmark, pytest.mark.selfcheck, pytest.mark.filterwarnings("ignore:lance is not fork-safe:UserWarning")]
N = 400


@pytest.fixture(scope="module")
def ray_local(pytestconfig):
    if not pytestconfig.getoption("machine_benchmarks"):
        pytest.skip("a measurement of the machine, not a claim: opt in with --machine-benchmarks")
    pytest.importorskip("ray.data", reason="ray is not installed: pip install 'pytest-rag-harness[ray]'")
    pytest.importorskip("lance_ray", reason="lance-ray is not installed: pip install 'pytest-rag-harness[ray]'")
    from harness.retrieval.index.ray_ingest import start_ray

    ray = start_ray(num_cpus=2)
    yield ray
    ray.shutdown()


def test_ray_throughput_per_worker(ray_local, tmp_path, rag_measure):
    from harness.retrieval.index.ray_ingest import ray_index_corpus

    write_corpus(tmp_path / "corpus.jsonl", N)
    stats = {}
    for workers in (1, 2):
        store = LanceStore(tmp_path / f"w{workers}", "corpus")
        st = ray_index_corpus(tmp_path / "corpus.jsonl", store, ONNX_INT8_MINILM, 384, workers=workers, batch=25)
        assert st.rows == N == len(store)
        stats[workers] = st
        rag_measure(f"ray_passages_per_s_{workers}w", st.passages_per_s, workers=workers, passages=N,
                pipeline_seconds=st.pipeline_seconds, index_seconds=st.index_seconds, per_worker=st.per_worker)
    ratio = stats[2].passages_per_s / stats[1].passages_per_s
    rag_measure("ray_speedup_2w_over_1w", ratio, per_worker_1w=stats[1].per_worker, per_worker_2w=stats[2].per_worker)
    print(f"\nRay, {N} passages, int8 ONNX: 1 worker {stats[1].passages_per_s:.1f} passages/s "
          f"({stats[1].pipeline_seconds:.1f} s); 2 workers {stats[2].passages_per_s:.1f} passages/s "
          f"({stats[2].pipeline_seconds:.1f} s, {stats[2].per_worker:.1f} per worker); 2 over 1: {ratio:.2f}")
