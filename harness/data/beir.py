"""BEIR-layout datasets: `corpus.jsonl`, `queries.jsonl`, `qrels/<split>.tsv`."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Sized, TypeVar

from harness.data.errors import DataError
from harness.data.jsonl import SkipLog, iter_jsonl, require_str
from harness.types import Document, Query

_T = TypeVar("_T", bound=Sized)


@dataclass
class BeirDataset:
    name: str
    corpus: dict[str, Document]
    queries: dict[str, Query]
    qrels: dict[str, dict[str, int]]
    skipped: SkipLog = field(default_factory=SkipLog)

    def judged_queries(self) -> dict[str, Query]:
        """Queries that have at least one relevant judgement (the ones metrics are computed over)."""
        return {q: self.queries[q] for q in sorted(self.qrels) if q in self.queries}


def iter_corpus(path: Path, skips: SkipLog | None = None, strict: bool = True) -> Iterator[Document]:
    """The documents of a BEIR `corpus.jsonl`, one at a time (only the ids seen are kept, for duplicates)."""
    skips = skips if skips is not None else SkipLog()
    seen: set[str] = set()
    for n, obj in iter_jsonl(path, skips, strict):
        try:
            did = require_str(obj, "_id", path, n)
            text = require_str(obj, "text", path, n, allow_empty=True)
            title = obj.get("title", "") or ""
            if not isinstance(title, str):
                raise DataError(path, n, "title", f"expected a string, got {type(title).__name__}")
            if did in seen:
                raise DataError(path, n, "_id", f"duplicate id {did!r}")
        except DataError as err:
            skips.handle(err, strict)
            continue
        seen.add(did)
        meta = {k: v for k, v in obj.items() if k not in ("_id", "text", "title")}
        yield Document(id=did, text=text, title=title, metadata=meta)


def load_corpus(path: Path, skips: SkipLog, strict: bool = True) -> dict[str, Document]:
    return {d.id: d for d in iter_corpus(path, skips, strict)}


def load_queries(path: Path, skips: SkipLog, strict: bool = True) -> dict[str, Query]:
    queries: dict[str, Query] = {}
    for n, obj in iter_jsonl(path, skips, strict):
        try:
            qid = require_str(obj, "_id", path, n)
            text = require_str(obj, "text", path, n)
            if qid in queries:
                raise DataError(path, n, "_id", f"duplicate id {qid!r}")
        except DataError as err:
            skips.handle(err, strict)
            continue
        queries[qid] = Query(id=qid, text=text, metadata={k: v for k, v in obj.items() if k not in ("_id", "text")})
    return queries


def load_qrels_tsv(path: Path, skips: SkipLog, strict: bool = True, *,
                   corpus: dict[str, Document] | None = None,
                   queries: dict[str, Query] | None = None) -> dict[str, dict[str, int]]:
    """BEIR qrels: a header `query-id corpus-id score`, then tab-separated rows."""
    qrels: dict[str, dict[str, int]] = {}
    with path.open(encoding="utf-8") as fh:
        for n, raw in enumerate(fh, 1):
            line = raw.rstrip("\n")
            if not line.strip():
                continue
            parts = line.split("\t")
            if n == 1 and parts[0].strip().lower() in ("query-id", "query_id", "qid"):
                continue
            try:
                if len(parts) != 3:
                    raise DataError(path, n, None, f"expected 3 tab-separated columns, got {len(parts)}")
                qid, did, grade_s = (p.strip() for p in parts)
                try:
                    grade = int(float(grade_s))
                except ValueError:
                    raise DataError(path, n, "score", f"not a number: {grade_s!r}") from None
                if corpus is not None and did not in corpus:
                    raise DataError(path, n, "corpus-id", f"unknown document {did!r}")
                if queries is not None and qid not in queries:
                    raise DataError(path, n, "query-id", f"unknown query {qid!r}")
                if did in qrels.get(qid, {}):
                    raise DataError(path, n, "corpus-id", f"duplicate judgement for ({qid!r}, {did!r})")
            except DataError as err:
                skips.handle(err, strict)
                continue
            if grade > 0:
                qrels.setdefault(qid, {})[did] = grade
    return qrels


def load_beir(root: str | Path, split: str = "test", *, strict: bool = True) -> BeirDataset:
    """Load a BEIR folder; in `strict=False` mode bad lines are skipped and counted in `.skipped`."""
    root = Path(root)
    for name in ("corpus.jsonl", "queries.jsonl", f"qrels/{split}.tsv"):
        if not (root / name).exists():
            raise DataError(root / name, None, None, "file not found (expected BEIR layout)")
    skips = SkipLog()
    corpus = nonempty(load_corpus(root / "corpus.jsonl", skips, strict), root / "corpus.jsonl", "documents")
    queries = nonempty(load_queries(root / "queries.jsonl", skips, strict), root / "queries.jsonl", "queries")
    qrels = nonempty(load_qrels_tsv(root / "qrels" / f"{split}.tsv", skips, strict, corpus=corpus, queries=queries),
                     root / "qrels" / f"{split}.tsv", "relevance judgements (grade above 0)")
    return BeirDataset(root.name, corpus, queries, qrels, skips)


def nonempty(items: _T, path: Path, what: str) -> _T:
    """`items`, or a DataError naming the file when it holds none (nothing could be measured on it)."""
    if not items:
        raise DataError(path, None, None, f"no {what}: the file is empty or every line was skipped")
    return items
