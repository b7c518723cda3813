"""Labelled sets a judge is measured against.

- `load_labelled_answers(path)`: hand-labelled (question, context, answer) items, each answer's claims with a
  supported / not supported label, and the answer's kind: `supported` (every claim supported), `unsupported`
  (none), `partial` (some) or `abstention` (no claim: the answer declines). The shipped set,
  `fixtures/judge/retail_kb_labelled.jsonl`, was written for this project from the retail KB's pages (68 items:
  16 sections × the four kinds, and four hard cases: paraphrased support, and claims whose words are in the
  context but whose meaning is not). Errors name the file, line and field.
- `halueval_items(qa, n, seed)`: HaluEval QA as a labelled set for free: a seeded sample of `n` questions, half
  answered with the right answer (supported by the gold passage) and half with the hallucinated one (not
  supported), each question once, the gold passage(s) from the qrels as the context.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args

from harness.data.errors import DataError
from harness.data.jsonl import SkipLog, iter_jsonl, require_str
from harness.judge.llm_judge import ClaimItem

__all__ = ["HAND_LABELLED", "Kind", "LabelledAnswer", "LabelledClaim", "halueval_items", "load_labelled_answers"]

HAND_LABELLED = Path(__file__).resolve().parents[2] / "fixtures" / "judge" / "retail_kb_labelled.jsonl"
Kind = Literal["supported", "unsupported", "partial", "abstention"]


@dataclass(frozen=True)
class LabelledClaim:
    item: ClaimItem
    supported: bool
    answer_id: str


@dataclass(frozen=True)
class LabelledAnswer:
    id: str
    kind: Kind
    question: str
    context: str
    answer: str
    claims: tuple[tuple[str, bool], ...]
    source: str = ""
    note: str = ""

    def claim_items(self) -> list[LabelledClaim]:
        return [LabelledClaim(ClaimItem(self.question, self.context, t), s, self.id) for t, s in self.claims]


def _kind_of(claims: tuple[tuple[str, bool], ...]) -> str:
    if not claims:
        return "abstention"
    flags = {s for _, s in claims}
    return "supported" if flags == {True} else "unsupported" if flags == {False} else "partial"


def load_labelled_answers(path: str | Path = HAND_LABELLED) -> list[LabelledAnswer]:
    """Read a hand-labelled answer set; every line must be valid (file:line:field errors)."""
    path = Path(path)
    if not path.exists():
        raise DataError(path, None, None, "missing: a labelled answer set (JSONL)")
    out: list[LabelledAnswer] = []
    seen: set[str] = set()
    for n, obj in iter_jsonl(path, SkipLog(), True):
        fields = {k: require_str(obj, k, path, n, allow_empty=k == "context")
                  for k in ("id", "label", "question", "context", "answer")}
        if fields["id"] in seen:
            raise DataError(path, n, "id", f"duplicate id {fields['id']!r}")
        seen.add(fields["id"])
        if fields["label"] not in get_args(Kind):
            raise DataError(path, n, "label", f"expected one of {list(get_args(Kind))}, got {fields['label']!r}")
        raw = obj.get("claims")
        if not isinstance(raw, list):
            raise DataError(path, n, "claims", "expected a list of {text, supported} objects")
        claims = []
        for i, c in enumerate(raw):
            if not (isinstance(c, dict) and isinstance(c.get("text"), str) and c["text"].strip()
                    and isinstance(c.get("supported"), bool)):
                raise DataError(path, n, f"claims[{i}]", "expected {\"text\": non-empty string, \"supported\": bool}")
            claims.append((c["text"], c["supported"]))
        claims_t = tuple(claims)
        if _kind_of(claims_t) != fields["label"]:
            raise DataError(path, n, "label", f"{fields['label']!r} does not fit its claims' labels (they make it "
                                              f"{_kind_of(claims_t)!r})")
        out.append(LabelledAnswer(fields["id"], fields["label"], fields["question"], fields["context"],  # type: ignore[arg-type]
                                  fields["answer"], claims_t, str(obj.get("source", "")), str(obj.get("note", ""))))
    return out


def halueval_items(qa: Any, n: int, *, seed: int = 13) -> list[LabelledClaim]:
    """`n` seeded (gold passage, question, answer) items from a QA set with hallucinated answers and qrels:
    each question once, half with its right answer (label supported), half with its hallucinated one."""
    usable = [i for i in qa.items if i.hallucinated_answer and any(g > 0 and d in qa.corpus
                                                                   for d, g in qa.qrels.get(i.id, {}).items())]
    if len(usable) < n:
        raise ValueError(f"{qa.name}: {n} items asked for, {len(usable)} questions have a hallucinated answer and "
                         "a judged passage in the corpus")
    rng = random.Random(seed)
    chosen = rng.sample(usable, n)
    right = set(rng.sample(range(n), n // 2))
    out = []
    for k, item in enumerate(chosen):
        gold = [d for d, g in sorted(qa.qrels[item.id].items()) if g > 0 and d in qa.corpus]
        context = "\n\n".join(qa.corpus[d].text for d in gold)
        answer = item.answers[0] if k in right else item.hallucinated_answer
        out.append(LabelledClaim(ClaimItem(item.text, context, answer), k in right, item.id))
    return out
