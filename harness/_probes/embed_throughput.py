"""How fast an embedder encodes, against what the machine can do (issue #29 item 1).

The limit is arithmetic: a BERT-style encoder spends `flops_per_passage(shape, tokens)` on a passage (its
projections, feed-forward and attention; the embedding lookup and pooling are left out as negligible), so at
the machine's measured float32 matmul rate (`harness._probes.llm_throughput.measure_machine`) it cannot encode more
than `passages_per_s_limit` passages a second. A measured rate is stated as a share of that limit. Batched
vectors are compared with one-at-a-time vectors by their smallest cosine (`min_cosine`): a cached vector must
not depend on which texts shared its batch.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np


@dataclass(frozen=True)
class EncoderShape:
    """The shape that fixes an encoder's arithmetic: layers, hidden width, feed-forward width, token limit."""

    layers: int
    hidden: int
    intermediate: int
    max_tokens: int

    @classmethod
    def from_folder(cls, folder: str | Path) -> "EncoderShape":
        """From a sentence-transformers folder: `config.json` (HF) and `sentence_bert_config.json` (token limit)."""
        folder = Path(folder)
        cfg = json.loads((folder / "config.json").read_text())
        st = folder / "sentence_bert_config.json"
        max_tokens = json.loads(st.read_text()).get("max_seq_length") if st.is_file() else None
        return cls(int(cfg["num_hidden_layers"]), int(cfg["hidden_size"]), int(cfg["intermediate_size"]),
                   int(max_tokens or cfg.get("max_position_embeddings", 512)))


def flops_per_passage(shape: EncoderShape, tokens: int) -> float:
    """Multiply-adds ×2 of one passage of `tokens` tokens (truncated at the model's limit): per layer the Q, K,
    V and output projections (4 · 2·t·h²), the feed-forward (2 · 2·t·h·f) and attention's QKᵀ and AV (2 · 2·t²·h)."""
    t = min(int(tokens), shape.max_tokens)
    h, f = shape.hidden, shape.intermediate
    return float(shape.layers * (8 * t * h * h + 4 * t * h * f + 4 * t * t * h))


def passages_per_s_limit(shape: EncoderShape, token_counts: Sequence[int], gflops: float) -> float:
    """The most passages a second a machine doing `gflops` GFLOP/s can encode, over these passages' lengths."""
    total = sum(flops_per_passage(shape, t) for t in token_counts)
    return len(token_counts) * gflops * 1e9 / total if total else float("nan")


def min_cosine(a: np.ndarray, b: np.ndarray) -> float:
    """The smallest row-wise cosine between two equally shaped sets of vectors."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError(f"shapes differ: {a.shape} vs {b.shape}")
    num = (a * b).sum(axis=1)
    den = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    return float(np.min(num / np.where(den == 0, 1.0, den)))


@dataclass(frozen=True)
class EncodeRate:
    """One measured encoding run: passages, wall seconds, passages a second and its share of the limit."""

    label: str
    passages: int
    seconds: float
    limit_per_s: float

    @property
    def per_s(self) -> float:
        return self.passages / self.seconds

    @property
    def share_of_limit(self) -> float:
        return self.per_s / self.limit_per_s

    def as_context(self) -> dict[str, Any]:
        return {"path": self.label, "passages": self.passages, "seconds": round(self.seconds, 3),
                "passages_per_s": round(self.per_s, 2), "limit_passages_per_s": round(self.limit_per_s, 2),
                "share_of_limit": round(self.share_of_limit, 4)}


def time_encoding(label: str, encode: Callable[[list[str]], np.ndarray], texts: list[str],
                  limit_per_s: float) -> tuple[EncodeRate, np.ndarray]:
    """Encode `texts` once (after a warm-up on the first few) and time it."""
    encode(texts[:4])
    t0 = time.perf_counter()
    vecs = encode(texts)
    return EncodeRate(label, len(texts), time.perf_counter() - t0, limit_per_s), vecs
