"""Answer and text metrics: EM and token F1 with SQuAD normalisation, Jaccard, edit distance, token counts."""
from __future__ import annotations

import re
import string
from collections import Counter
from typing import Iterable

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCT = set(string.punctuation)


def normalize_answer(text: str) -> str:
    """SQuAD v1.1 normalisation: lower-case, drop punctuation and articles, squeeze whitespace."""
    text = text.lower()
    text = "".join(ch for ch in text if ch not in _PUNCT)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def exact_match(prediction: str, ground_truth: str | Iterable[str]) -> float:
    """1.0 if the normalised prediction equals any normalised ground truth, else 0.0."""
    truths = [ground_truth] if isinstance(ground_truth, str) else list(ground_truth)
    pred = normalize_answer(prediction)
    return float(any(pred == normalize_answer(t) for t in truths))


def _f1(pred_tokens: list[str], truth_tokens: list[str]) -> float:
    if not pred_tokens or not truth_tokens:
        return float(pred_tokens == truth_tokens)
    common = Counter(pred_tokens) & Counter(truth_tokens)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision = same / len(pred_tokens)
    recall = same / len(truth_tokens)
    return 2 * precision * recall / (precision + recall)


def token_f1(prediction: str, ground_truth: str | Iterable[str]) -> float:
    """SQuAD token-level F1, max over ground truths."""
    truths = [ground_truth] if isinstance(ground_truth, str) else list(ground_truth)
    pred = normalize_answer(prediction).split()
    return max((_f1(pred, normalize_answer(t).split()) for t in truths), default=0.0)


def jaccard(a: str | Iterable[str], b: str | Iterable[str]) -> float:
    """Jaccard similarity of two token sets (strings are lower-cased and split on whitespace)."""
    sa = set(a.lower().split()) if isinstance(a, str) else set(a)
    sb = set(b.lower().split()) if isinstance(b, str) else set(b)
    if not sa and not sb:
        return 1.0
    return len(sa & sb) / len(sa | sb)


def mean_pairwise_jaccard(texts: list[str]) -> float:
    """Mean Jaccard over all unordered pairs (0.0 for fewer than two texts)."""
    pairs = [(i, j) for i in range(len(texts)) for j in range(i + 1, len(texts))]
    if not pairs:
        return 0.0
    return sum(jaccard(texts[i], texts[j]) for i, j in pairs) / len(pairs)


def edit_distance(a: str | list[str], b: str | list[str]) -> int:
    """Levenshtein distance (insert, delete, substitute = 1) over characters or token lists."""
    if len(a) < len(b):
        a, b = b, a
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def token_count(text: str, tokenizer: object | None = None) -> int:
    """Tokens in `text`: by `tokenizer.encode` when given (e.g. tiktoken), else whitespace words."""
    if tokenizer is not None:
        return len(tokenizer.encode(text))  # type: ignore[attr-defined]
    return len(text.split())


def answer_match(prediction: str, answers: str | Iterable[str]) -> float:
    """1.0 if any normalised gold answer occurs in the normalised prediction (the PopQA 'match'
    accuracy used by Self-RAG and CRAG), else 0.0."""
    golds = [answers] if isinstance(answers, str) else list(answers)
    pred = f" {normalize_answer(prediction)} "
    return float(any(g and f" {g} " in pred for g in (normalize_answer(a) for a in golds)))


# Content words: what a sentence says beyond function words (the E4 reasoning detectors, CRAG's lexical evaluator)
CONTENT_STOPWORDS = frozenset(
    "a an the of to in on for and or is are was were be been what which who whom how why when where does do did "
    "can could should would will with by from at as that this these those it its there their any some must".split()
)


def content_words(text: str) -> set[str]:
    """Lower-cased words of more than two letters that are not function words, punctuation split off."""
    norm = " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())
    return {w for w in norm.split() if w not in CONTENT_STOPWORDS and len(w) > 2}
