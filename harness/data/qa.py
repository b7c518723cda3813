"""Open-QA and multiple-choice sets: `queries.jsonl` with `answers` (QA) or `options` + `answer` (MCQ), and for
QA an optional BEIR corpus and qrels (`corpus.jsonl`, `qrels/<split>.tsv`) to retrieve from.

    qa = load_qa("../shared/data/halueval-qa")      # 8,000 questions, 9,936 passages, qrels
    mcq = load_mcq("../shared/data/mmlu")           # options A-D, the correct letter

Errors name the file, the line and the field, as the BEIR loader's do; `strict=False` skips bad lines and
counts them. `dataset_card(root)` gives what the report shows of a set: its name, counts, content hash, and
the source and licence read from a README beside it (the folder's own, or its parent's table row).
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from harness.data.beir import load_corpus, load_qrels_tsv, nonempty
from harness.data.errors import DataError
from harness.data.jsonl import SkipLog, iter_jsonl, require_str
from harness.types import Document


@dataclass(frozen=True)
class QAItem:
    """One open question: its accepted answers, and what the set says beside them."""

    id: str
    text: str
    answers: tuple[str, ...]
    hallucinated_answer: str | None = None  # HaluEval: a fluent wrong answer made to look right
    false_premise: bool = False  # FreshQA: the right response rejects the question's premise
    metadata: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)


@dataclass(frozen=True)
class MCQItem:
    """One multiple-choice question: options by letter, and the correct letter."""

    id: str
    text: str
    options: tuple[tuple[str, str], ...]  # (letter, text) in letter order
    answer: str
    metadata: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def answer_index(self) -> int:
        return [k for k, _ in self.options].index(self.answer)

    @property
    def option_texts(self) -> list[str]:
        return [v for _, v in self.options]


@dataclass
class QADataset:
    name: str
    items: list[QAItem]
    corpus: dict[str, Document] = field(default_factory=dict)  # empty: closed-book (no passages to retrieve)
    qrels: dict[str, dict[str, int]] = field(default_factory=dict)
    skipped: SkipLog = field(default_factory=SkipLog)
    root: Path | None = None

    def by_id(self) -> dict[str, QAItem]:
        return {i.id: i for i in self.items}


@dataclass
class MCQDataset:
    name: str
    items: list[MCQItem]
    skipped: SkipLog = field(default_factory=SkipLog)
    root: Path | None = None


def _answers(obj: dict[str, Any], path: Path, n: int) -> tuple[str, ...]:
    if "answers" not in obj:
        raise DataError(path, n, "answers", "missing (a list of accepted answers)")
    value = obj["answers"]
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value:
        raise DataError(path, n, "answers", "expected a non-empty list of strings")
    for i, a in enumerate(value):
        if not isinstance(a, str) or not a.strip():
            raise DataError(path, n, "answers", f"item {i} is not a non-empty string")
    return tuple(value)


def _queries_file(root: Path) -> Path:
    path = root / "queries.jsonl"
    if not path.is_file():
        raise DataError(path, None, None, "missing: a QA or MCQ set needs queries.jsonl")
    return path


def _read_items(path: Path, strict: bool, parse: Callable[[dict[str, Any], str, str, int], Any]) -> tuple[list, SkipLog]:
    """Every line's `_id` and `text` checked, the rest by `parse(obj, id, text, line)`; ids unique."""
    skips, items, seen = SkipLog(), [], set()
    for n, obj in iter_jsonl(path, skips, strict):
        try:
            qid = require_str(obj, "_id", path, n)
            item = parse(obj, qid, require_str(obj, "text", path, n), n)
            if qid in seen:
                raise DataError(path, n, "_id", f"duplicate id {qid!r}")
        except DataError as err:
            skips.handle(err, strict)
            continue
        seen.add(qid)
        items.append(item)
    return nonempty(items, path, "questions"), skips


def load_qa(root: str | Path, split: str = "test", *, strict: bool = True) -> QADataset:
    """A QA set; `corpus.jsonl` and `qrels/<split>.tsv` are read when present (qrels need the corpus)."""
    root = Path(root)
    path = _queries_file(root)

    def parse(obj: dict[str, Any], qid: str, text: str, n: int) -> QAItem:
        answers = _answers(obj, path, n)
        halluc = obj.get("hallucinated_answer")
        if halluc is not None and not isinstance(halluc, str):
            raise DataError(path, n, "hallucinated_answer", f"expected a string, got {type(halluc).__name__}")
        premise = obj.get("false_premise", False)
        if not isinstance(premise, bool):
            raise DataError(path, n, "false_premise", f"expected true or false, got {premise!r}")
        meta = {k: v for k, v in obj.items() if k not in ("_id", "text", "answers", "hallucinated_answer",
                                                          "false_premise")}
        return QAItem(qid, text, answers, halluc, premise, meta)

    items, skips = _read_items(path, strict, parse)
    corpus: dict[str, Document] = {}
    qrels: dict[str, dict[str, int]] = {}
    if (root / "corpus.jsonl").is_file():
        corpus = nonempty(load_corpus(root / "corpus.jsonl", skips, strict), root / "corpus.jsonl", "documents")
        qpath = root / "qrels" / f"{split}.tsv"
        if qpath.is_file():
            qrels = load_qrels_tsv(qpath, skips, strict, corpus=corpus)
    return QADataset(root.name, items, corpus, qrels, skips, root)


def load_mcq(root: str | Path, *, strict: bool = True) -> MCQDataset:
    """An MCQ set: `options` maps letters to texts (at least two), `answer` is one of the letters."""
    root = Path(root)
    path = _queries_file(root)

    def parse(obj: dict[str, Any], qid: str, text: str, n: int) -> MCQItem:
        options = obj.get("options")
        if not isinstance(options, dict) or len(options) < 2:
            raise DataError(path, n, "options", "expected an object of at least two letter: text pairs")
        for k, v in options.items():
            if not isinstance(v, str) or not v.strip():
                raise DataError(path, n, "options", f"option {k!r} is not a non-empty string")
        answer = require_str(obj, "answer", path, n)
        if answer not in options:
            raise DataError(path, n, "answer", f"{answer!r} is not one of the options {sorted(options)}")
        meta = {k: v for k, v in obj.items() if k not in ("_id", "text", "options", "answer")}
        return MCQItem(qid, text, tuple(sorted(options.items())), answer, meta)

    items, skips = _read_items(path, strict, parse)
    return MCQDataset(root.name, items, skips, root)


# ---------------------------------------------------------------- dataset cards
def content_hash(root: str | Path) -> str:
    """sha256 over the set's data files (queries, corpus, qrels), in a fixed order: the first 16 hex digits."""
    root = Path(root)
    h = hashlib.sha256()
    for p in sorted([root / "queries.jsonl", root / "corpus.jsonl", *sorted((root / "qrels").glob("*.tsv"))]):
        if p.is_file():
            h.update(p.relative_to(root).as_posix().encode() + b"\0")
            with p.open("rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    h.update(block)
    return h.hexdigest()[:16]


def _readme_row(root: Path) -> dict[str, str]:
    """Source and licence from a README: the folder's own (its first paragraph), or the parent README's table
    row for this folder (the last column: source and licence)."""
    own = root / "README.md"
    if own.is_file():
        text = own.read_text(encoding="utf-8").strip()
        para = text.split("\n\n")[0].strip().lstrip("# ").strip()
        lic = re.search(r"licen[cs]e[:\s]+([^\n.;]+)", text, flags=re.I)
        return {"source": para[:300], "licence": lic.group(1).strip() if lic else ""}
    parent = root.parent / "README.md"
    if parent.is_file():
        for line in parent.read_text(encoding="utf-8").splitlines():
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if line.lstrip().startswith("|") and cells and cells[0].strip("`").rstrip("/") == root.name:
                last = cells[-1]
                lic = re.search(r"\b(MIT|Apache[- ]2\.0|CC[- ][A-Z-]+(?: \d\.\d)?|BSD[- ]\d-Clause|GPL-?\d)\b", last)
                return {"source": last, "licence": lic.group(1) if lic else ""}
    return {"source": "", "licence": ""}


def dataset_card(root: str | Path, *, counts: dict[str, int] | None = None) -> dict[str, Any]:
    """What the report shows of a set: name, path, counts, content hash, source and licence."""
    root = Path(root)
    return {"name": root.name, "path": str(root), "counts": dict(counts or {}), "content_hash": content_hash(root),
            **_readme_row(root)}


def qa_card(ds: QADataset) -> dict[str, Any]:
    assert ds.root is not None
    return dataset_card(ds.root, counts={"questions": len(ds.items), "passages": len(ds.corpus),
                                         "judged_questions": len(ds.qrels),
                                         "false_premise": sum(i.false_premise for i in ds.items),
                                         "skipped_lines": ds.skipped.count})


def mcq_card(ds: MCQDataset) -> dict[str, Any]:
    assert ds.root is not None
    return dataset_card(ds.root, counts={"questions": len(ds.items), "skipped_lines": ds.skipped.count})


# ---------------------------------------------------------------- QA as multiple choice
LETTERS = "ABCDEFGH"


def mcq_from_qa(items: list[QAItem], *, seed: int, n_options: int = 4) -> list[MCQItem]:
    """Multiple choice from QA items that carry a hallucinated answer (HaluEval): the right answer, the
    hallucinated one, and `n_options - 2` right answers of other questions as distractors. Seeded; the right
    answer's position is balanced (each letter is right for the same number of questions, +-1), and the
    hallucinated answer's position is recorded in `metadata['hallucinated']`."""
    import random

    if n_options < 2 or n_options > len(LETTERS):
        raise ValueError(f"n_options must be between 2 and {len(LETTERS)}, got {n_options}")
    usable = [i for i in items if i.hallucinated_answer]
    if n_options > 2 and len(usable) < n_options - 1:
        raise ValueError(f"{n_options} options need at least {n_options - 1} questions for distractors")
    rng = random.Random(seed)
    positions = [k % n_options for k in range(len(usable))]
    rng.shuffle(positions)
    pool = [i.answers[0] for i in usable]
    out = []
    for item, gold_pos in zip(usable, positions):
        right, wrong = item.answers[0], item.hallucinated_answer or ""
        taken = {normalize(right), normalize(wrong)}
        distractors: list[str] = []
        tries = 0
        while len(distractors) < n_options - 2:
            tries += 1
            if tries > 100 * len(pool):
                raise ValueError(f"{item.id}: not enough distinct right answers among the questions for "
                                 f"{n_options - 2} distractors")
            cand = pool[rng.randrange(len(pool))]
            if normalize(cand) not in taken:
                taken.add(normalize(cand))
                distractors.append(cand)
        others = [wrong] + distractors
        rng.shuffle(others)
        texts = others[:gold_pos] + [right] + others[gold_pos:]
        opts = tuple((LETTERS[k], t) for k, t in enumerate(texts))
        out.append(MCQItem(item.id, item.text, opts, LETTERS[gold_pos],
                           {**item.metadata, "hallucinated": LETTERS[texts.index(wrong)], "from": "qa"}))
    return out


def normalize(text: str) -> str:
    return " ".join(text.lower().split())
