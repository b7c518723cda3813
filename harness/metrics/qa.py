"""Open-QA answer scoring: one response against a question's accepted answers.

- `exact_match`, `token_f1`: SQuAD v1.1 (Rajpurkar et al., 2016, the official evaluation script): lower-case,
  drop punctuation and the articles a/an/the, squeeze whitespace; EM is equality, F1 the token-overlap F1;
  both take the best over the accepted answers.
- `answer_match`: "match" accuracy, an accepted answer (normalised as above) occurs in the normalised
  response on word boundaries: what PopQA (Mallen et al., 2023), Self-RAG (Asai et al., 2024) and CRAG
  (Yan et al., 2024) report for long-form responses.
- `is_abstention`: the response states that it declines or cannot answer (I don't know, I cannot answer, there
  is not enough information, the context does not mention it, ...), matched by `ABSTENTION_PATTERNS`, or is
  nothing but a bare abstention word ("Unknown.", "Not sure."): SimpleQA's "not attempted" (Wei et al., 2024)
  in the absence of a judge. A word such as "unknown" or "insufficient" inside an answer is not an abstention.
- `rejects_premise`: the response says the question's premise is false: "false premise", or a denial that what
  the question presupposes exists or happened (there is no ..., no one has ever ..., has never been ..., does
  not have any ..., never happened), by `REJECTION_PATTERNS`; given the question, also a negated sentence about
  what the question asks (two of its content words). Any other negation ("is not available for in-store
  shopping", "did not adopt the Euro until 2024") is not a rejection. FreshQA (Vu et al., 2023) counts a false-premise question as
  answered correctly only when the response rejects the premise: `score_answer` follows that rule, and also
  accepts a response that matches one of the set's accepted answers (which for these questions are
  rejections themselves).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable

from harness.metrics._text import answer_match, exact_match, normalize_answer, token_f1

__all__ = ["ABSTENTION_PATTERNS", "BARE_ABSTENTIONS", "REJECTION_PATTERNS", "QAScore", "answer_match", "exact_match",
           "is_abstention", "normalize_answer", "rejects_premise", "score_answer", "token_f1"]

ABSTENTION_PATTERNS = (
    # first person: I don't know, I'm not sure, I cannot answer/tell/find, I have no information
    r"\b(?:i|we) (?:do not|don't|dont|did not|didn't) know\b",
    r"\b(?:i|we)(?: am|'m| are|'re) (?:not sure|unsure|not certain|unable to (?:answer|determine|find|say|tell))\b",
    r"\b(?:i|we) (?:cannot|can't|can not|could not|couldn't|am unable to|are unable to) (?:answer|determine|find|"
    r"say|tell|provide|verify|confirm|know)\b",
    r"\b(?:i|we) (?:have no|lack|don't have|do not have) (?:any |enough |relevant )?(?:information|knowledge|data)\b",
    # a sentence that opens with the inability: "Unable to determine from the given context."
    r"(?:^|[.!?:]\s+)(?:sorry,?\s+)?(?:cannot|can't|unable to|not able to) (?:answer|determine|say|tell|find)\b",
    r"\b(?:cannot|can't|can not|could not) be (?:answered|determined|found|verified)\b",
    # not enough information (to answer), no relevant information was found
    r"\b(?:there is|there was|there's) (?:not enough|insufficient|no) (?:relevant )?(?:information|context|data|"
    r"evidence|details)\b",
    r"\b(?:not enough|insufficient) (?:information|context|data|evidence|details) (?:to|in|about|is|was)\b",
    r"\bno (?:relevant )?(?:information|answer|data) (?:is|was|could be) (?:found|available|provided|given)\b",
    r"\bno relevant (?:information|sources?|context)\b",
    # the context does not say; not mentioned in the context; the answer is not available / unknown
    r"\b(?:context|sources?|documents?|passages?|text|information provided) (?:do(?:es)? not|don't|doesn't|did not|"
    r"didn't) (?:contain|mention|say|provide|include|specify|state|cover|give)\b",
    r"\bnot (?:mentioned|provided|stated|specified|given|found|available) in the (?:context|sources?|documents?|"
    r"passages?|text)\b",
    r"\b(?:the )?answer (?:is|was) not (?:available|known|provided|given)\b",
    r"\b(?:the )?answer (?:is|remains) unknown\b",
    r"\bnot available for (?:this|the|your) (?:question|query)\b",
)
# a response that is nothing but one of these (after `normalize_answer`) abstains
BARE_ABSTENTIONS = frozenset({"unknown", "not sure", "unsure", "no answer", "na", "no idea", "not known",
                              "insufficient information", "not enough information"})
REJECTION_PATTERNS = (
    r"\bfalse premise\b", r"\bpremise (?:is|seems|appears) (?:to be )?(?:false|incorrect|wrong|mistaken|flawed)\b",
    r"\bquestion (?:is based on|assumes|rests on|contains) (?:a |an )?(?:false|incorrect|mistaken|wrong)\b",
    # what the question presupposes does not exist or did not happen
    r"\bthere (?:is|are|was|were|has been|have been|has never been|have never been) (?:no|not any|never)\b",
    r"\bno (?:one|\w+)(?: \w+)? (?:has|have|had) (?:ever |yet )?(?:been|\w+ed)\b",
    r"\b(?:has|have|had) (?:never|not yet|not ever) (?:been|\w+ed)\b",
    r"\b(?:has|have|had)(?: not|n't) (?:yet )?(?:been|happened|occurred|taken place|existed)\b",
    r"\bnever (?:happened|existed|occurred|took place|been)\b", r"\bno such\b",
    r"\b(?:does|do|did)(?: not|n't) (?:have any|exist|happen|occur|take place)\b",
    r"\b(?:that|this|it) (?:is|was) (?:not true|untrue|a myth)\b",
)
_ABSTAIN = re.compile("|".join(ABSTENTION_PATTERNS), re.I | re.M)
_REJECT = re.compile("|".join(REJECTION_PATTERNS), re.I)


def is_abstention(response: str) -> bool:
    """True when the response states it cannot answer, is a bare abstention word, or is empty."""
    text = response.strip().replace("\u2019", "'")
    return not text or normalize_answer(text) in BARE_ABSTENTIONS or bool(_ABSTAIN.search(text))


_NEGATION = re.compile(r"\b(?:not|never|no)\b|n't\b", re.I)
_NOT_A_DENIAL = re.compile(r"\b(?:until|only|but|except|unless|if)\b", re.I)  # "did not ... until 2024": it did
_YES_NO = re.compile(r"^\W*(?:is|are|was|were|do|does|did|has|have|had|can|could|will|would|should)\b", re.I)
_STOP = frozenset("a an the of to in on for and or is are was were be been what which who whom how why when where does do "
                  "did can could should would will with by from at as that this these those it its there their any some "
                  "has have had not never no year".split())


def _words(text: str) -> set[str]:
    return {w for w in re.sub(r"[^a-z0-9]+", " ", text.lower()).split() if w not in _STOP and len(w) > 2}


def rejects_premise(response: str, question: str = "") -> bool:
    """True when the response denies the question's premise: 'false premise', a denial that what the question
    presupposes exists or happened (`REJECTION_PATTERNS`), or, given the question (not a yes/no one), a negated
    sentence that shares at least two content words with it ("Bodybuilding is not an Olympic sport" to "In what
    year did bodybuilding become an Olympic sport?"), unless it only delays or limits ("did not ... until 2024")."""
    text = response.replace("\u2019", "'")
    if _REJECT.search(text):
        return True
    if not question.strip() or _YES_NO.match(question):
        return False
    asked = _words(question)
    if not asked:
        return False
    for sentence in re.split(r"(?<=[.!?;])\s+|\n+", text):
        if _NEGATION.search(sentence) and not _NOT_A_DENIAL.search(sentence) and \
                len(_words(sentence) & asked) >= min(2, len(asked)):
            return True
    return False


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
