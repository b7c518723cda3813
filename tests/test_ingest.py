"""Streaming, resumable ingestion (harness.retrieval.index.ingest): batches appended as they are encoded; a run
that dies mid-way is resumed by encoding only what the table lacks, every passage ending there exactly once."""
from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from harness.data.beir import iter_corpus
from harness.retrieval.embed import HashingEmbedder, NoCache
from harness.retrieval.index.ingest import PARTIAL, file_fingerprint, ingest, stored_ids
from harness.retrieval.index.lancedb_store import LanceStore
from harness.types import Document

ROOT = Path(__file__).resolve().parents[1]


def _docs(n: int, tag: str = "") -> list[Document]:
    return [Document(id=f"d{i}", text=f"passage {i} about topic {i % 7} {tag}") for i in range(n)]


class Counting(HashingEmbedder):
    """The hashing embedder, uncached, counting texts; `fail_after` batches it raises (a run that dies)."""

    def __init__(self, fail_after: int | None = None):
        super().__init__(64, cache=NoCache())
        self.fail_after, self.batches, self.texts = fail_after, 0, 0

    def encode(self, texts):
        if self.fail_after is not None and self.batches >= self.fail_after:
            raise RuntimeError("the process died")
        self.batches += 1
        self.texts += len(texts)
        return super().encode(texts)


def _ids(store: LanceStore) -> list[str]:
    return store.table.search().select(["id"]).limit(None).to_arrow().column("id").to_pylist()


@pytest.mark.unit
def test_batches_are_appended_and_equal_a_one_shot_encoding(tmp_path):
    docs, emb = _docs(23), Counting()
    store = LanceStore(tmp_path, "c")
    st = ingest(store, iter(docs), emb, fingerprint="fp", batch=5)
    assert (st.rows, st.encoded, st.batches, st.resumed, st.skipped) == (23, 23, 5, False, False)
    assert emb.batches == 5 and sorted(_ids(store)) == sorted(d.id for d in docs)
    ids, vecs = store.vectors()
    ref = HashingEmbedder(64).encode([d.full_text for d in docs])
    order = [int(i[1:]) for i in ids]
    assert np.allclose(vecs, ref[order])
    assert store.stored_fingerprint() == "fp"


@pytest.mark.unit
def test_a_run_that_dies_is_resumed_encoding_only_what_is_missing(tmp_path):
    docs = _docs(23)
    store = LanceStore(tmp_path, "c")
    with pytest.raises(RuntimeError, match="died"):
        ingest(store, iter(docs), Counting(fail_after=2), fingerprint="fp", batch=5)
    assert len(store) == 10 and store.stored_fingerprint() == PARTIAL + "fp"
    emb = Counting()
    st = ingest(LanceStore(tmp_path, "c"), iter(docs), emb, fingerprint="fp", batch=5)
    assert (st.resumed, st.already_stored, st.encoded, emb.texts) == (True, 10, 13, 13)
    ids = _ids(LanceStore(tmp_path, "c"))
    assert len(ids) == len(set(ids)) == 23
    again = Counting()
    st = ingest(LanceStore(tmp_path, "c"), iter(docs), again, fingerprint="fp", batch=5)
    assert st.skipped and again.texts == 0


@pytest.mark.unit
def test_other_content_starts_afresh_instead_of_resuming(tmp_path):
    store = LanceStore(tmp_path, "c")
    with pytest.raises(RuntimeError):
        ingest(store, iter(_docs(12)), Counting(fail_after=1), fingerprint="old", batch=5)
    emb = Counting()
    st = ingest(LanceStore(tmp_path, "c"), iter(_docs(12, "v2")), emb, fingerprint="new", batch=5)
    assert not st.resumed and emb.texts == 12 and len(LanceStore(tmp_path, "c")) == 12


@pytest.mark.unit
def test_a_duplicate_id_is_an_error(tmp_path):
    docs = _docs(4) + [Document(id="d1", text="again")]
    with pytest.raises(ValueError, match="duplicate id 'd1'"):
        ingest(LanceStore(tmp_path, "c"), docs, Counting(), fingerprint="fp", batch=2)


@pytest.mark.unit
def test_file_fingerprint_by_hand(tmp_path):
    f = tmp_path / "corpus.jsonl"
    f.write_bytes(b"x" * 3_000_000)
    h = hashlib.sha256(b"emb")
    h.update(b"\x00corpus.jsonl\x01" + b"x" * 3_000_000)
    assert file_fingerprint("emb", f) == h.hexdigest()


@pytest.mark.unit
def test_iter_corpus_streams_documents_and_names_a_duplicates_line(tmp_path):
    f = tmp_path / "corpus.jsonl"
    f.write_text("\n".join(json.dumps({"_id": i, "text": t}) for i, t in [("a", "x"), ("b", "y"), ("a", "z")]))
    it = iter_corpus(f)
    assert next(it).id == "a" and next(it).id == "b"
    with pytest.raises(Exception, match="corpus.jsonl.*3.*duplicate id 'a'"):
        next(it)


CHILD = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from harness.data.beir import iter_corpus
    from harness.retrieval.embed import HashingEmbedder, NoCache
    from harness.retrieval.index.ingest import ingest, file_fingerprint
    from harness.retrieval.index.lancedb_store import LanceStore

    corpus, db, flag = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])

    class Stalls(HashingEmbedder):
        batches = 0
        def encode(self, texts):
            self.batches += 1
            if self.batches == 4:  # three batches are stored: say so, then hang until killed
                flag.write_text("3")
                time.sleep(3600)
            return super().encode(texts)

    emb = Stalls(64, cache=NoCache())
    ingest(LanceStore(db, "c"), iter_corpus(corpus), emb, fingerprint=file_fingerprint(emb.name, corpus), batch=10)
""")


@pytest.mark.integration
def test_kill_9_mid_ingestion_then_rerun_leaves_every_passage_once(tmp_path):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("\n".join(json.dumps({"_id": f"p{i}", "text": f"passage {i} on subject {i % 5}"})
                                for i in range(95)))
    flag = tmp_path / "stored"
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(corpus), str(tmp_path / "db"), str(flag)],
                            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    try:
        while not flag.exists():  # the child writes the flag after its third append; no clock decides the test
            assert proc.poll() is None, "the ingesting process ended before it could be killed"
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    store = LanceStore(tmp_path / "db", "c")
    assert len(store) == 30 and store.stored_fingerprint().startswith(PARTIAL)
    emb = Counting()
    st = ingest(store, iter_corpus(corpus), emb, fingerprint=file_fingerprint(emb.name, corpus), batch=10)
    assert (st.resumed, st.already_stored, emb.texts) == (True, 30, 65)
    ids = _ids(LanceStore(tmp_path / "db", "c"))
    assert len(ids) == len(set(ids)) == 95 and stored_ids(store) == {f"p{i}" for i in range(95)}
