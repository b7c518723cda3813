"""How well the answer detectors behind the E2-E4 claims do against hand labels (issue 31).

- `DetectorScore` / `score_detector(predictions, labels)`: the confusion counts of a yes/no detector against hand
  labels, and its precision (tp / (tp + fp)) and recall (tp / (tp + fn)), nan where the denominator is 0.
- `load_detector_set(path)`: the hand-labelled set, `fixtures/detectors/labelled_answers.jsonl`: real model
  answers, each labelled by hand, per detector, with a one-line reason (a label left null is not labelled for
  that detector). Errors name the file, line and field.
- `DETECTORS` / `measure(name, items, loose=False)`: each detector (`abstains`, `rejects_premise`, `has_reasoning`,
  `specific_reasoning`) scored on the items labelled for it; `loose=True` scores the detector as it was before
  issue 31 (`loose_*` below), to report what it got wrong.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

from harness.data.errors import DataError
from harness.data.jsonl import SkipLog, iter_jsonl, require_str

__all__ = ["DETECTORS", "DETECTOR_SET", "DetectorItem", "DetectorScore", "load_detector_set", "loose_abstention",
           "loose_has_reasoning", "loose_rejects_premise", "loose_specific_reasoning", "measure", "score_detector"]

DETECTOR_SET = Path(__file__).resolve().parents[2] / "fixtures" / "detectors" / "labelled_answers.jsonl"
DETECTORS = ("abstains", "rejects_premise", "has_reasoning", "specific_reasoning")


@dataclass(frozen=True)
class DetectorScore:
    tp: int
    fp: int
    fn: int
    tn: int

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else math.nan

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else math.nan

    @property
    def worst(self) -> float:
        """min(precision, recall) over the sides that are defined: a detector is as good as its weaker side (one
        that finds nothing where there is something to find has recall 0); nan when neither is defined."""
        sides = [x for x in (self.precision, self.recall) if not math.isnan(x)]
        return min(sides) if sides else math.nan

    def as_context(self) -> dict[str, Any]:
        return {"precision": self.precision, "recall": self.recall, "tp": self.tp, "fp": self.fp, "fn": self.fn,
                "tn": self.tn, "n": self.tp + self.fp + self.fn + self.tn}


def score_detector(predictions: Iterable[bool], labels: Iterable[bool]) -> DetectorScore:
    """Confusion counts of `predictions` against the hand `labels` (same order, same length)."""
    preds, golds = [bool(p) for p in predictions], [bool(g) for g in labels]
    if len(preds) != len(golds):
        raise ValueError(f"{len(preds)} predictions for {len(golds)} labels")
    pairs = list(zip(preds, golds))
    return DetectorScore(tp=pairs.count((True, True)), fp=pairs.count((True, False)),
                         fn=pairs.count((False, True)), tn=pairs.count((False, False)))


@dataclass(frozen=True)
class DetectorItem:
    id: str
    source: str
    question: str
    answer: str
    labels: dict[str, bool | None]
    note: str
    reasoning_steps: str = ""
    retrieved_chunks: tuple[dict[str, Any], ...] = ()
    false_premise: bool = False

    def row(self) -> dict[str, Any]:
        """The item as an E4 result row (the fields the reasoning detectors read)."""
        return {"query": self.question, "llm_answer": self.answer, "reasoning_steps": self.reasoning_steps,
                "retrieved_chunks": list(self.retrieved_chunks)}


def load_detector_set(path: str | Path = DETECTOR_SET) -> list[DetectorItem]:
    """Read the hand-labelled detector set; every line must be valid (file:line:field errors)."""
    path = Path(path)
    items: list[DetectorItem] = []
    seen: set[str] = set()
    for n, rec in iter_jsonl(path, SkipLog(), strict=True):
        ident = require_str(rec, "id", path, n)
        if ident in seen:
            raise DataError(path, n, "id", f"duplicate {ident!r}")
        seen.add(ident)
        labels = rec.get("labels")
        if not isinstance(labels, dict) or not labels or set(labels) - set(DETECTORS):
            raise DataError(path, n, "labels", f"must map some of {', '.join(DETECTORS)} to true, false or null")
        if any(v is not None and not isinstance(v, bool) for v in labels.values()):
            raise DataError(path, n, "labels", "values must be true, false or null")
        items.append(DetectorItem(
            id=ident, source=require_str(rec, "source", path, n), question=require_str(rec, "question", path, n),
            answer=require_str(rec, "answer", path, n, allow_empty=True), labels={k: labels.get(k) for k in DETECTORS},
            note=require_str(rec, "note", path, n), reasoning_steps=rec.get("reasoning_steps") or "",
            retrieved_chunks=tuple(rec.get("retrieved_chunks") or ()), false_premise=bool(rec.get("false_premise"))))
    return items


def _detector(name: str, loose: bool) -> Callable[[DetectorItem], bool]:
    """The detector `name` as a function of an item; the library's one is looked up at call time, so a
    negative control that replaces it is what gets measured."""
    from harness.metrics import qa
    from harness.metrics import reasoning as e2e4_reasoning

    if name == "abstains":
        return lambda it: (loose_abstention if loose else qa.is_abstention)(it.answer)
    if name == "rejects_premise":
        return lambda it: loose_rejects_premise(it.answer) if loose else qa.rejects_premise(it.answer, it.question)
    if name == "has_reasoning":
        return lambda it: (loose_has_reasoning if loose else e2e4_reasoning.has_reasoning)(it.row())
    if name == "specific_reasoning":
        return lambda it: (loose_specific_reasoning if loose else e2e4_reasoning.specific_reasoning)(it.row())
    raise KeyError(f"unknown detector {name!r}; known: {', '.join(DETECTORS)}")


def measure(name: str, items: Iterable[DetectorItem], *, loose: bool = False) -> DetectorScore:
    """Detector `name` scored on the items labelled for it (the pre-issue-31 variant when `loose`)."""
    labelled = [it for it in items if it.labels.get(name) is not None]
    detect = _detector(name, loose)
    return score_detector([detect(it) for it in labelled], [bool(it.labels[name]) for it in labelled])


# ---------------------------------------------------------------- the detectors before issue 31
_LOOSE_ABSTAIN = re.compile("|".join((
    r"\bi (?:do not|don't|dont) know\b", r"\bi(?: am|'m) not sure\b", r"\b(?:cannot|can't|can not|unable to) "
    r"(?:answer|determine|find|say|tell|provide|verify)\b", r"\b(?:not enough|insufficient|no) (?:information|"
    r"context|data|evidence)\b", r"\bno (?:answer|relevant (?:information|sources?))\b",
    r"\b(?:the )?(?:context|sources?|documents?|passages?) (?:do(?:es)? not|don't|doesn't) (?:contain|mention|say|"
    r"provide|include)\b", r"\bunknown\b", r"\bi (?:have no|lack) (?:information|knowledge)\b",
    r"\bnot (?:in the (?:context|sources?|documents?)|mentioned|provided|stated)\b", r"\binsufficient\b",
    r"\bdo not know\b")), re.I)
_LOOSE_REJECT = re.compile("|".join((
    r"\bfalse premise\b", r"\bpremise (?:is|seems) (?:false|incorrect|wrong|mistaken)\b",
    r"\bthere (?:is|are|was|were|has been|have been) (?:no|not any|never)\b",
    r"\b(?:has|have|had) (?:never|not)\b", r"\b(?:did|does|do|is|are|was|were) not\b",
    r"\b(?:didn't|doesn't|don't|isn't|aren't|wasn't|weren't|hasn't|haven't|hadn't|never)\b",
    r"\bno (?:one|animal|person|such|record|evidence)\b", r"\b(?:incorrect|mistaken|not true|untrue|not correct)\b")),
    re.I)


def loose_abstention(answer: str) -> bool:
    """Before issue 31: any abstention phrase anywhere, a bare 'unknown' or 'insufficient' included."""
    return not answer.strip() or bool(_LOOSE_ABSTAIN.search(answer))


def loose_rejects_premise(answer: str, question: str = "") -> bool:
    """Before issue 31: any negation ('is not', 'never', "didn't") read as rejecting the premise (no question)."""
    return bool(_LOOSE_REJECT.search(answer))


def loose_has_reasoning(row: dict[str, Any]) -> bool:
    """Before issue 31: any non-empty reasoning, echo of the prompt included."""
    return bool((row.get("reasoning_steps") or "").strip())


def loose_specific_reasoning(row: dict[str, Any]) -> bool:
    """Before issue 31: the reasoning names a retrieved page or shares two content words with the question."""
    from harness.metrics import content_words

    steps = (row.get("reasoning_steps") or "").lower()
    files = {c["metadata"]["filename"].lower() for c in row.get("retrieved_chunks") or []}
    return any(f in steps or f[:-3] in steps for f in files) or len(content_words(steps) & content_words(row["query"])) >= 2
