"""`python -m harness._probes.ingest N DIR`: ingest N synthetic passages (seeded, ~60 words each)
streamed from a JSONL file into a LanceDB table under DIR with the hashing embedder, and print one JSON line:
passages, seconds, peak resident memory (ru_maxrss) before and after ingestion. A fresh process per size, so
the peak is this ingestion's (issue #29 item 2); the vector index is left out (ANN has its own benchmark)."""
from __future__ import annotations

import json
import random
import sys
import time
from pathlib import Path

from harness.peak_memory import peak_rss_mib

WORDS = [f"w{i}" for i in range(5000)]


def write_corpus(path: Path, n: int, seed: int = 0) -> None:
    rng = random.Random(seed)
    with path.open("w", encoding="utf-8") as fh:
        for i in range(n):
            fh.write(json.dumps({"_id": f"p{i}", "text": " ".join(rng.choices(WORDS, k=60))}) + "\n")


def main(argv: list[str]) -> int:
    n, root = int(argv[0]), Path(argv[1])
    root.mkdir(parents=True, exist_ok=True)
    corpus = root / "corpus.jsonl"
    write_corpus(corpus, n)
    from harness.data.beir import iter_corpus
    from harness.retrieval.embed import HashingEmbedder, NoCache
    from harness.retrieval.index.ingest import file_fingerprint, ingest
    from harness.retrieval.index.lancedb_store import LanceStore

    emb = HashingEmbedder(384, cache=NoCache())
    store = LanceStore(root / "db", "corpus", ann_threshold=10**12)
    before = peak_rss_mib()
    t0 = time.perf_counter()
    st = ingest(store, iter_corpus(corpus), emb, fingerprint=file_fingerprint(emb.name, corpus), batch=1024,
                total=n, stage="ingest probe")
    print(json.dumps({"passages": n, "rows": st.rows, "seconds": time.perf_counter() - t0,
                      "peak_rss_mib_before": before, "peak_rss_mib": peak_rss_mib(),
                      "corpus_mib": corpus.stat().st_size / 2**20, "vectors_mib": n * 384 * 4 / 2**20}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
