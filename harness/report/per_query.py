"""Per-query scores and a few of the model's outputs, carried in a check's `per_query` context for the report.

Bounded: the score table keeps every query (id, query text cut to QUERY_CHARS, both arms' scores); the model's
text and the judge's rulings are kept for three queries only, the best (largest gain), the worst (largest loss)
and the median one by candidate - baseline, each text cut to TEXT_CHARS.

    check_sequential(..., final=lambda n: {"per_query": per_query_context(ids, b, c, texts=..., outputs=...)})
"""
from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

QUERY_CHARS = 200
TEXT_CHARS = 1500
TIE = 1e-12  # the tie tolerance of harness.stats._effect: a smaller difference is "unchanged"


def truncate(text: Any, limit: int) -> str:
    """`text` as a string of at most `limit` characters, an ellipsis marking a cut."""
    s = "" if text is None else str(text)
    return s if len(s) <= limit else s[: max(limit - 1, 0)] + "…"


def outcome(baseline: float | None, candidate: float | None, lower_is_better: bool = False) -> str:
    """improved / unchanged / degraded by candidate - baseline (ties within 1e-12; a drop improves a score where
    lower is better, e.g. a hallucination rate), n/a when either is missing."""
    if baseline is None or candidate is None or not (math.isfinite(baseline) and math.isfinite(candidate)):
        return "n/a"
    d = (baseline - candidate) if lower_is_better else (candidate - baseline)
    return "improved" if d > TIE else "degraded" if d < -TIE else "unchanged"


def picks(ids: Sequence[str], baseline: Sequence[float], candidate: Sequence[float], *,
          lower_is_better: bool = False) -> dict[str, str]:
    """{"best", "worst", "median"} -> query id by the gain candidate - baseline (baseline - candidate where lower
    is better): the largest gain, the smallest, and the lower median one (the ((n-1)//2)-th in ascending order);
    ties go to the earlier query. {} without queries."""
    sign = -1.0 if lower_is_better else 1.0

    def gain(i: int) -> float:
        return sign * (float(candidate[i]) - float(baseline[i]))

    order = sorted(range(len(ids)), key=lambda i: (gain(i), i))
    if not order:
        return {}
    best = max(range(len(ids)), key=lambda i: (gain(i), -i))
    return {"best": ids[best], "worst": ids[order[0]], "median": ids[order[(len(order) - 1) // 2]]}


def _num(x: Any) -> float | None:
    try:
        f = float(x)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def per_query_context(ids: Sequence[str], baseline: Sequence[float], candidate: Sequence[float], *,
                      texts: Mapping[str, str] | None = None,
                      outputs: Mapping[str, Mapping[str, Any]] | None = None,
                      rulings: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
                      baseline_label: str = "baseline", candidate_label: str = "technique",
                      lower_is_better: bool = False) -> dict[str, Any]:
    """The `per_query` context of a paired claim: every query's two scores (and text), and for the best, worst
    and median query what the model wrote (`outputs[id]`: label -> text) and the judge's rulings
    (`rulings[id]`: dicts with judge, claim, verdict and, where the judge gave one, reason)."""
    if not (len(ids) == len(baseline) == len(candidate)):
        raise ValueError(f"{len(ids)} ids, {len(baseline)} baseline and {len(candidate)} candidate scores")
    ids = [str(i) for i in ids]
    texts = texts or {}
    samples = []
    for pick, qid in picks(ids, baseline, candidate, lower_is_better=lower_is_better).items():
        i = ids.index(qid)
        sample: dict[str, Any] = {"pick": pick, "id": qid, "query": truncate(texts.get(qid, ""), QUERY_CHARS * 5),
                                  "baseline": _num(baseline[i]), "candidate": _num(candidate[i])}
        if outputs and qid in outputs:
            sample["outputs"] = [[str(k), truncate(v, TEXT_CHARS)] for k, v in outputs[qid].items()
                                 if v not in (None, "")]  # pairs: results.json sorts keys, the order is the caller's
        if rulings and qid in rulings:
            sample["rulings"] = [{"judge": str(r.get("judge", "")), "claim": truncate(r.get("claim", ""), TEXT_CHARS),
                                  "verdict": str(r.get("verdict", "")),
                                  "reason": truncate(r.get("reason", ""), TEXT_CHARS)} for r in rulings[qid]]
        samples.append(sample)
    return {"ids": ids, "baseline": [_num(x) for x in baseline], "candidate": [_num(x) for x in candidate],
            "texts": [truncate(texts.get(q, ""), QUERY_CHARS) for q in ids] if texts else None,
            "baseline_label": baseline_label, "candidate_label": candidate_label,
            "lower_is_better": bool(lower_is_better), "samples": samples}


def technique_outputs(result: Any) -> dict[str, str]:
    """What a technique's model wrote for one query (a `TechniqueResult`): its answer and the detail it keeps
    (hypothetical documents, generated or rewritten queries, the CRAG action), the sources it answered from."""
    out: dict[str, str] = {}
    for key, value in sorted((getattr(result, "detail", None) or {}).items()):
        if isinstance(value, (list, tuple)):
            text = "\n---\n".join(str(v) for v in value)
        elif isinstance(value, (str, int, float)):
            text = str(value)
        else:
            continue
        out[key.replace("_", " ")] = text
    if getattr(result, "answer", None):
        out["answer"] = str(result.answer)
    hits = getattr(result, "hits", None) or []
    if hits and out.get("answer"):
        out["sources"] = ", ".join(str(h.id) for h in hits[:10])
    return out


def read_per_query(value: Any) -> dict[str, Any] | None:
    """A `per_query` context in the shape `per_query_context` writes (ids, baseline, candidate of one length), or
    None (another shape, e.g. a claim's own per-query detail)."""
    if not isinstance(value, dict):
        return None
    ids, b, c = value.get("ids"), value.get("baseline"), value.get("candidate")
    if not (isinstance(ids, list) and isinstance(b, list) and isinstance(c, list) and len(ids) == len(b) == len(c)):
        return None
    texts = value.get("texts")
    return {"ids": ids, "baseline": b, "candidate": c,
            "texts": texts if isinstance(texts, list) and len(texts) == len(ids) else None,
            "baseline_label": value.get("baseline_label") or "baseline",
            "candidate_label": value.get("candidate_label") or "technique",
            "lower_is_better": bool(value.get("lower_is_better")),
            "samples": value.get("samples") or []}
