"""Inputs of the E2-E4 study: a folder of Markdown pages, `structure.json` and `queries.jsonl`."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness.data.errors import DataError
from harness.data.jsonl import SkipLog, iter_jsonl
from harness.types import Document

QueryType = Literal["direct", "multi_hop", "negative"]


class QueryInput(BaseModel):
    """One evaluation query (SRS §4.1)."""

    model_config = ConfigDict(extra="forbid")
    query_id: str = Field(min_length=1)
    query_type: QueryType
    query: str = Field(min_length=1)
    ground_truth: str
    context_reference: list[str]
    metadata: dict[str, Any] = Field(default_factory=dict)


class PageInfo(BaseModel):
    model_config = ConfigDict(extra="allow")
    id: str
    title: str
    filename: str
    category: str
    primary_topic: str
    secondary_topics: list[str] = Field(default_factory=list)
    links_to: list[str] = Field(default_factory=list)


class Structure(BaseModel):
    """KB topology (SRS §4.2)."""

    model_config = ConfigDict(extra="allow")
    num_pages: int
    pages: list[PageInfo]


@dataclass
class ExperimentInputs:
    pages: dict[str, Document]
    structure: Structure
    queries: list[QueryInput]
    skipped: SkipLog = field(default_factory=SkipLog)


def _first_error(exc: ValidationError) -> tuple[str, str]:
    err = exc.errors()[0]
    return ".".join(str(x) for x in err["loc"]) or "(root)", err["msg"]


def load_pages(kb_dir: Path) -> dict[str, Document]:
    """All `*.md` files except README.md, keyed by filename."""
    pages = {}
    for p in sorted(kb_dir.glob("*.md")):
        if p.name.lower() == "readme.md":
            continue
        pages[p.name] = Document(id=p.name, text=p.read_text(encoding="utf-8"), metadata={"filename": p.name})
    return pages


def load_structure(path: Path) -> Structure:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DataError(path, exc.lineno, None, f"invalid JSON ({exc.msg})") from None
    try:
        return Structure.model_validate(data)
    except ValidationError as exc:
        fld, msg = _first_error(exc)
        raise DataError(path, None, fld, msg) from None


def load_queries_jsonl(path: Path, *, strict: bool = True, skips: SkipLog | None = None) -> list[QueryInput]:
    skips = skips or SkipLog()
    out: list[QueryInput] = []
    seen: set[str] = set()
    for n, obj in iter_jsonl(path, skips, strict):
        try:
            q = QueryInput.model_validate(obj)
        except ValidationError as exc:
            fld, msg = _first_error(exc)
            skips.handle(DataError(path, n, fld, msg), strict)
            continue
        if q.query_id in seen:
            skips.handle(DataError(path, n, "query_id", f"duplicate id {q.query_id!r}"), strict)
            continue
        seen.add(q.query_id)
        out.append(q)
    return out


def load_experiment_inputs(kb_dir: str | Path, *, strict: bool = True) -> ExperimentInputs:
    """Load and cross-check: every `context_reference` and structure filename must be a page."""
    kb = Path(kb_dir)
    for name in ("structure.json", "queries.jsonl"):
        if not (kb / name).exists():
            raise DataError(kb / name, None, None, "file not found")
    pages = load_pages(kb)
    structure = load_structure(kb / "structure.json")
    for i, page in enumerate(structure.pages):
        if page.filename not in pages:
            raise DataError(kb / "structure.json", None, f"pages.{i}.filename", f"no such page {page.filename!r}")
    skips = SkipLog()
    queries = load_queries_jsonl(kb / "queries.jsonl", strict=strict, skips=skips)
    return ExperimentInputs(pages, structure, queries, skips)


def first_of_each_type(queries: list[QueryInput], n: int | None) -> list[QueryInput]:
    """The first `n` queries taking each query type in turn (file order within a type, types in order of first
    appearance), so a short run covers direct, multi-hop and negative queries alike; all of them when `n` is
    None or 0. The selection keeps file order."""
    if not n or n >= len(queries):
        return list(queries)
    by_type: dict[str, list[QueryInput]] = {}
    for q in queries:
        by_type.setdefault(q.query_type, []).append(q)
    chosen: set[str] = set()
    lanes = [iter(v) for v in by_type.values()]
    while len(chosen) < n:
        for lane in lanes:
            nxt = next(lane, None)
            if nxt is not None and len(chosen) < n:
                chosen.add(nxt.query_id)
    return [q for q in queries if q.query_id in chosen]
