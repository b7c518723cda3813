"""Embedding at the machine's limit (issue #29 item 1): passages/s of each encoding path on Cranfield and on
halueval-qa's passages beside the limit that the machine's measured float32 matmul rate sets for this encoder
(harness._probes.embed_throughput), and how far batched vectors move from one-at-a-time ones. Figures, not
verdicts, opt-in: `pytest -m benchmark benchmarks/test_embedding_throughput.py --machine-benchmarks`, alone on
the machine (every path encodes cold: no vector cache)."""
from __future__ import annotations

import os
import random

import numpy as np
import pytest

pytestmark = [pytest.mark.benchmark, pytest.mark.selfcheck]  # the harness checking itself
SAMPLE = 1000  # passages per set (seeded sample; Cranfield has 1,400): four cold paths stay within minutes


@pytest.fixture(scope="module")
def machine(pytestconfig):
    if not pytestconfig.getoption("machine_benchmarks"):
        pytest.skip("a measurement of the machine, not a claim: opt in with --machine-benchmarks")
    from harness._probes.llm_throughput import measure_machine

    return measure_machine(os.cpu_count() or 1)


def _paths():
    from harness.retrieval.embed import OnnxMiniLMEmbedder, SentenceTransformerEmbedder

    return {"int8 onnx, one at a time": lambda: OnnxMiniLMEmbedder(batch_size=1),
            "int8 onnx, sorted batches of 16": lambda: OnnxMiniLMEmbedder(batch_size=16),
            "float torch, one at a time": lambda: SentenceTransformerEmbedder(batch_size=1),
            "float torch, sorted batches of 16": lambda: SentenceTransformerEmbedder(batch_size=16)}


@pytest.mark.parametrize("name", ["cranfield", "halueval-qa"])
def test_embedding_throughput_against_the_limit(name, machine, rag_beir_dataset, rag_measure):
    from harness.retrieval.embed import packaged_model_path
    from harness._probes.embed_throughput import EncoderShape, min_cosine, passages_per_s_limit, time_encoding

    docs = list(rag_beir_dataset(name).corpus.values())
    texts = [d.full_text for d in random.Random(0).sample(docs, min(SAMPLE, len(docs)))]
    folder = packaged_model_path("all-MiniLM-L6-v2")
    shape = EncoderShape.from_folder(folder)
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tok.enable_truncation(shape.max_tokens)
    tokens = [len(e.ids) for e in tok.encode_batch(texts)]
    limit = passages_per_s_limit(shape, tokens, machine.matmul_gflops)
    vectors, rates = {}, {}
    for label, make in _paths().items():
        emb = make()
        rate, vectors[label] = time_encoding(label, emb._encode_uncached, texts, limit)
        rates[label] = rate
    for label, rate in rates.items():
        one = label.split(",")[0] + ", one at a time"
        extra = {"min_cosine_to_one_at_a_time": min_cosine(vectors[label], vectors[one])} if one != label else {}
        rag_measure("embedding_passages_per_s", rate.per_s, dataset=name, model="all-MiniLM-L6-v2",
                mean_tokens=float(np.mean(tokens)), **rate.as_context(), **machine.as_context(), **extra)
    float_ref = vectors["float torch, one at a time"]
    for label, vecs in vectors.items():
        rag_measure("embedding_min_cosine_to_float_reference", min_cosine(vecs, float_ref), dataset=name, path=label)
    assert all(r.share_of_limit < 1.5 for r in rates.values()), \
        f"a path beat the arithmetic limit by half again: the FLOP count or the matmul rate is wrong: {rates}"
