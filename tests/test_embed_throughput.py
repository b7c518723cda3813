"""harness._probes.embed_throughput: the encoder's FLOPs per passage and the limit, computed by hand."""
from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.spatial.distance import cosine

from harness._probes.embed_throughput import (EncodeRate, EncoderShape, flops_per_passage, min_cosine,
                                                passages_per_s_limit)

MINILM = EncoderShape(layers=6, hidden=384, intermediate=1536, max_tokens=256)


@pytest.mark.unit
def test_flops_per_passage_by_hand():
    # 6 × (8·100·384² + 4·100·384·1536 + 4·100²·384) = 6 × (117,964,800 + 235,929,600 + 15,360,000)
    assert flops_per_passage(MINILM, 100) == 2_215_526_400
    # truncated at 256 tokens: 6 × (301,989,888 + 603,979,776 + 100,663,296)
    assert flops_per_passage(MINILM, 300) == flops_per_passage(MINILM, 256) == 6_039_797_760


@pytest.mark.unit
def test_limit_by_hand():
    assert passages_per_s_limit(MINILM, [100, 300], 100.0) == pytest.approx(200e9 / 8_255_324_160, rel=1e-12)
    assert np.isnan(passages_per_s_limit(MINILM, [], 100.0))


@pytest.mark.unit
def test_min_cosine_against_scipy():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(20, 8)), rng.normal(size=(20, 8))
    assert min_cosine(a, b) == pytest.approx(min(1 - cosine(x, y) for x, y in zip(a, b)), abs=1e-12)
    assert min_cosine(a, 3 * a) == pytest.approx(1.0, abs=1e-12)
    with pytest.raises(ValueError, match="shapes differ"):
        min_cosine(a, b[:3])


@pytest.mark.unit
def test_shape_from_a_sentence_transformers_folder(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"num_hidden_layers": 6, "hidden_size": 384,
                                                      "intermediate_size": 1536, "max_position_embeddings": 512}))
    assert EncoderShape.from_folder(tmp_path).max_tokens == 512
    (tmp_path / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 256}))
    assert EncoderShape.from_folder(tmp_path) == MINILM


@pytest.mark.unit
def test_encode_rate_share_of_limit():
    r = EncodeRate("x", passages=100, seconds=4.0, limit_per_s=50.0)
    assert r.per_s == 25.0 and r.share_of_limit == 0.5 and r.as_context()["share_of_limit"] == 0.5


@pytest.mark.integration
def test_peak_rss_grows_with_an_allocation():
    """In a fresh process. The peak is a high-water mark, and a process started by fork + exec keeps its parent's
    (Linux), so the allocation is made larger than whatever peak the process starts with."""
    import subprocess
    import sys

    code = ("import numpy as np; from harness.peak_memory import peak_rss_mib as p; a = p(); "
            "b = np.ones(int((a + 256) * 2**20) // 8); b.sum(); print(a, p())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    before, after = map(float, out)
    assert after >= before + 128  # (peak + 256) MiB allocated and written: the peak grows by at least 128 MiB
