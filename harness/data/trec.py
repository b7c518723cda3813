"""TREC run and qrels files (whitespace-separated, as trec_eval reads them); BEIR's qrels TSV is read too."""
from __future__ import annotations

import math
from itertools import chain
from pathlib import Path
from typing import Any, Callable, Mapping

from harness.data.errors import DataError
from harness.data.jsonl import SkipLog
from harness.metrics._ranking import order_run


def _rows(path: Path, ncols: int, skips: SkipLog, strict: bool, *, extra_ok: bool):
    """Non-blank, non-comment lines split on whitespace; `extra_ok`: fields after the `ncols`th are ignored."""
    with path.open(encoding="utf-8") as fh:
        for n, raw in enumerate(fh, 1):
            parts = raw.split()
            if not parts or parts[0].startswith("#"):  # trec_eval skips blank lines and `#` comment lines
                continue
            if len(parts) < ncols or (len(parts) > ncols and not extra_ok):
                want = f"at least {ncols}" if extra_ok else str(ncols)
                skips.handle(DataError(path, n, None, f"expected {want} columns, got {len(parts)}"), strict)
                continue
            yield n, parts[:ncols]


class _Irregular(Exception):
    """A line the lean readers leave to the line-by-line ones (which report or skip it as their callers ask)."""


def _lean(path: Path, ncols: int, key: int, value: int, convert: Callable[[str], Any]) -> dict[str, dict] | None:
    """{qid: {docid: value}} read with one split per line when every line is regular (exactly `ncols` fields, no
    comment, no repeated docid, a value `convert` takes); None at the first irregular one."""
    out: dict[str, dict[str, Any]] = {}
    last: str | None = None
    docs: dict[str, Any] = {}
    try:
        with path.open(encoding="utf-8") as fh:
            for parts in map(str.split, fh):
                if len(parts) != ncols:
                    if parts:
                        raise _Irregular
                    continue
                qid = parts[0]
                if qid != last:  # a file lists a query's lines together: one lookup per query, not per line
                    found = out.get(qid)
                    if found is None:
                        if qid.startswith("#"):
                            raise _Irregular
                        found = out[qid] = {}
                    docs = found
                    last = qid
                did = parts[key]
                if did in docs:
                    raise _Irregular
                docs[did] = convert(parts[value])
    except (_Irregular, ValueError):
        return None
    return out


def read_trec_qrels(path: str | Path, *, strict: bool = True, skips: SkipLog | None = None) -> dict[str, dict[str, int]]:
    """`qid iter docid rel` lines -> {qid: {docid: rel}}, every judgement kept (<= 0 too), as trec_eval keeps them."""
    path, skips = Path(path), skips or SkipLog()
    lean = _lean(path, 4, 2, 3, int)
    if lean is not None:
        return _judged(path, lean)
    out: dict[str, dict[str, int]] = {}
    for n, (qid, _it, did, rel) in _rows(path, 4, skips, strict, extra_ok=False):
        try:
            grade = int(rel)
        except ValueError:
            skips.handle(DataError(path, n, "rel", f"not an integer: {rel!r}"), strict)
            continue
        if did in out.get(qid, {}):
            skips.handle(DataError(path, n, "docid", f"duplicate judgement for ({qid!r}, {did!r})"), strict)
            continue
        out.setdefault(qid, {})[did] = grade
    return _judged(path, out)


def _judged(path: Path, qrels: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
    """Qrels with at least one relevant document: nothing to score a run against is an error, not a 0."""
    if not any(g > 0 for docs in qrels.values() for g in docs.values()):
        raise DataError(path, None, None, "no relevance judgements (the file is empty, or no grade is above 0): "
                                          "there is nothing to score a run against")
    return qrels


def read_qrels(path: str | Path, *, strict: bool = True, skips: SkipLog | None = None) -> dict[str, dict[str, int]]:
    """Qrels in either layout: TREC (`qid iter docid rel`) or BEIR's TSV (`query-id corpus-id score`, with or
    without its header line), told apart by the first line."""
    from harness.data.beir import load_qrels_tsv

    path, skips = Path(path), skips or SkipLog()
    with path.open(encoding="utf-8") as fh:
        first = next((line for line in fh if line.strip()), "")
    parts = first.rstrip("\r\n").split("\t")
    if len(parts) == 3 or parts[0].strip().lower() in ("query-id", "query_id", "qid"):
        return _judged(path, load_qrels_tsv(path, skips, strict))
    return read_trec_qrels(path, strict=strict, skips=skips)


def read_trec_run(path: str | Path, *, strict: bool = True, skips: SkipLog | None = None) -> dict[str, dict[str, float]]:
    """`qid Q0 docid rank score tag` lines -> {qid: {docid: score}}; fields after the tag are ignored (trec_eval)."""
    path, skips = Path(path), skips or SkipLog()
    lean = _lean(path, 6, 2, 4, float)
    if lean and all(map(math.isfinite, chain.from_iterable(d.values() for d in lean.values()))):
        return lean
    out: dict[str, dict[str, float]] = {}
    for n, (qid, _q0, did, _rank, score, _tag) in _rows(path, 6, skips, strict, extra_ok=True):
        try:
            value = float(score)
        except ValueError:
            skips.handle(DataError(path, n, "score", f"not a number: {score!r}"), strict)
            continue
        if not math.isfinite(value):  # nan and inf have no place in a ranking
            skips.handle(DataError(path, n, "score", f"not a finite number: {score!r}"), strict)
            continue
        if did in out.get(qid, {}):
            skips.handle(DataError(path, n, "docid", f"duplicate document {did!r} for query {qid!r}"), strict)
            continue
        out.setdefault(qid, {})[did] = value
    if not out:
        raise DataError(path, None, None, "no ranked documents (the run is empty): there is nothing to score")
    return out


def write_trec_run(run: Mapping[str, Mapping[str, float]], path: str | Path, tag: str = "rag-harness") -> None:
    """`qid Q0 docid rank score tag` lines in trec_eval's order; scores written in full (round-trip) precision,
    so that reading the file back ranks every query exactly as the run did."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with Path(path).open("w", encoding="utf-8") as fh:
        for qid in sorted(run):
            for rank, did in enumerate(order_run(run[qid]), 1):
                fh.write(f"{qid} Q0 {did} {rank} {float(run[qid][did])!r} {tag}\n")


def write_trec_qrels(qrels: Mapping[str, Mapping[str, int]], path: str | Path) -> None:
    """`qid 0 docid rel` lines, sorted."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with Path(path).open("w", encoding="utf-8") as fh:
        for qid in sorted(qrels):
            for did in sorted(qrels[qid]):
                fh.write(f"{qid} 0 {did} {int(qrels[qid][did])}\n")
