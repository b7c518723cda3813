"""Open-QA answer scoring: one response against a question's accepted answers.

- `exact_match`, `token_f1`: SQuAD v1.1 (Rajpurkar et al., 2016, the official evaluation script): lower-case,
  drop punctuation and the articles a/an/the, squeeze whitespace; EM is equality, F1 the token-overlap F1;
  both take the best over the accepted answers.
- `answer_match`: "match" accuracy, an accepted answer (normalised as above) occurs in the normalised
  response on word boundaries: what PopQA (Mallen et al., 2023), Self-RAG (Asai et al., 2024) and CRAG
  (Yan et al., 2024) report for long-form responses.
- `is_abstention`: the response declines to answer (I don't know, cannot answer, not enough information, ...),
  matched by the phrase list `ABSTENTION_PATTERNS`: SimpleQA's "not attempted" (Wei et al., 2024) in the
  absence of a judge.
- `rejects_premise`: the response says the question's premise is false (there is no / has never / did not /
  false premise, ...), by `REJECTION_PATTERNS`. FreshQA (Vu et al., 2023) counts a false-premise question as
  answered correctly only when the response rejects the premise: `score_answer` follows that rule, and also
  accepts a response that matches one of the set's accepted answers (which for these questions are
  rejections themselves).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable

from harness.metrics.text import answer_match, exact_match, normalize_answer, token_f1

__all__ = ["ABSTENTION_PATTERNS", "REJECTION_PATTERNS", "QAScore", "answer_match", "exact_match", "is_abstention",
           "normalize_answer", "rejects_premise", "score_answer", "token_f1"]

ABSTENTION_PATTERNS = (
    r"\bi (?:do not|don't|dont) know\b", r"\bi(?: am|'m) not sure\b", r"\b(?:cannot|can't|can not|unable to) "
    r"(?:answer|determine|find|say|tell|provide|verify)\b", r"\b(?:not enough|insufficient|no) (?:information|"
    r"context|data|evidence)\b", r"\bno (?:answer|relevant (?:information|sources?))\b",
    r"\b(?:the )?(?:context|sources?|documents?|passages?) (?:do(?:es)? not|don't|doesn't) (?:contain|mention|say|"
    r"provide|include)\b", r"\bunknown\b", r"\bi (?:have no|lack) (?:information|knowledge)\b",
    r"\bnot (?:in the (?:context|sources?|documents?)|mentioned|provided|stated)\b", r"\binsufficient\b",
    r"\bdo not know\b",
)
REJECTION_PATTERNS = (
    r"\bfalse premise\b", r"\bpremise (?:is|seems) (?:false|incorrect|wrong|mistaken)\b",
    r"\bthere (?:is|are|was|were|has been|have been) (?:no|not any|never)\b",
    r"\b(?:has|have|had) (?:never|not)\b", r"\b(?:did|does|do|is|are|was|were) not\b",
    r"\b(?:didn't|doesn't|don't|isn't|aren't|wasn't|weren't|hasn't|haven't|hadn't|never)\b",
    r"\bno (?:one|animal|person|such|record|evidence)\b", r"\b(?:incorrect|mistaken|not true|untrue|not correct)\b",
)
_ABSTAIN = re.compile("|".join(ABSTENTION_PATTERNS), re.I)
_REJECT = re.compile("|".join(REJECTION_PATTERNS), re.I)


def is_abstention(response: str) -> bool:
    """True when the response declines to answer, or is empty."""
    return not response.strip() or bool(_ABSTAIN.search(response))


def rejects_premise(response: str) -> bool:
    """True when the response denies the question's premise (a negation or an explicit 'false premise')."""
    return bool(_REJECT.search(response))


@dataclass(frozen=True)
class QAScore:
    exact_match: float
    f1: float
    match: float
    abstained: bool
    correct: bool  # match, or for a false-premise question: the premise rejected (FreshQA)
    false_premise: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {"em": self.exact_match, "f1": self.f1, "match": self.match, "abstained": self.abstained,
                "correct": self.correct, "false_premise": self.false_premise}


def score_answer(response: str, answers: str | Iterable[str], *, false_premise: bool = False) -> QAScore:
    """Every measure of one response. `correct` is `match` (an accepted answer in the response); for a
    false-premise question it is whether the premise was rejected or an accepted answer matched, and an
    abstention never counts as correct."""
    golds = [answers] if isinstance(answers, str) else list(answers)
    em, f1, m = exact_match(response, golds), token_f1(response, golds), answer_match(response, golds)
    abstained = is_abstention(response)
    if false_premise:
        correct = bool(m) or (rejects_premise(response) and not abstained)
    else:
        correct = bool(m)
    return QAScore(em, f1, m, abstained, correct, false_premise)
