"""The int8 ONNX embedder against the float model it was exported from (integration: both packaged models)."""
from __future__ import annotations

import numpy as np
import pytest

from harness.retrieval.embed import ONNX_INT8_MINILM, OnnxMiniLMEmbedder, make_embedder

pytestmark = pytest.mark.integration

TEXTS = [
    "The boundary layer on a flat plate thickens downstream.",
    "Heat transfer at hypersonic speeds depends on the wall temperature.",
    "Which magazine was started first, Arthur's Magazine or First for Women?",
    "A cat sat on the mat.",
    "Supersonic flow past a cone produces an attached shock wave " * 40,  # past the 256-token limit
]


def test_int8_vectors_match_the_float_model():
    float_vecs = make_embedder("all-MiniLM-L6-v2").uncached().encode(TEXTS)
    int8 = make_embedder(ONNX_INT8_MINILM).uncached()
    vecs = int8.encode(TEXTS)
    assert int8.name == ONNX_INT8_MINILM and vecs.shape == (5, 384)
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    cos = (vecs * float_vecs).sum(axis=1)
    assert cos.min() > 0.99, cos  # int8 weights move a vector by well under 1% of its direction
    # and it still ranks: each text is nearest to its own float vector
    assert (np.argmax(vecs @ float_vecs.T, axis=1) == np.arange(5)).all()


def test_a_tampered_model_file_is_refused(tmp_path):
    bad = tmp_path / "model.onnx"
    bad.write_bytes(b"not the model")
    with pytest.raises(ValueError, match="sha256 .* is not the pinned"):
        OnnxMiniLMEmbedder(model_file=bad)


@pytest.mark.parametrize("name", ["all-MiniLM-L6-v2", ONNX_INT8_MINILM])
def test_a_vector_does_not_depend_on_the_texts_encoded_with_it(name):
    """The vector cache keeps whichever call encoded a text first, so that call's company must not matter."""
    emb = make_embedder(name).uncached()
    together = emb.encode(TEXTS)
    alone = np.stack([emb.encode([t])[0] for t in TEXTS])
    assert np.array_equal(together, alone)
