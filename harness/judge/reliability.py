"""How far a judge can be trusted: agreement with labels, with itself, and with other judges.

- `cohen_kappa(a, b)`: Cohen (1960), κ = (p_o − p_e) / (1 − p_e) for two raters on the same items, p_e from
  each rater's marginal shares; nan when p_e = 1 (both raters constant and equal: agreement is undefined).
  Its interval is a seeded percentile bootstrap over items (`kappa_interval`).
- `accuracy` against labels with its Wilson interval (`harness.stats.intervals.wilson_interval`).
- `flip_rate(first, second)`: the share of items whose verdict differs between two rulings;
  `recheck_flips(first, second, perturbed)` the self-consistency figure the flag reads: of the items the judge
  ruled on, the share whose verdict a *perturbed* re-ruling (`harness.judge.llm_judge.perturbed`: another
  wording of the rubric and/or a sampled temperature, the cache bypassed) did not reproduce: it differs, it
  failed, or the re-ruling was not perturbed (a repeat of the first call cannot confirm anything).
- `krippendorff_alpha(ratings)`: Krippendorff's α for nominal data over units × raters with missing values
  (Krippendorff, "Computing Krippendorff's Alpha-Reliability", 2011): 1 − D_o / D_e from the coincidence
  matrix; α ≥ 0.667 is his floor for tentative conclusions, 0.8 for firm ones.
- `majority_verdict(ratings)`: each unit's most frequent rating (ties: None).

`JudgeReliability` gathers them for one judge. κ and accuracy are taken over *every* item: a failed ruling
(None) is a verdict of its own that never equals a label, so it counts as a disagreement (κ over the ruled items
alone is kept beside it as `kappa_ruled`). The judge is *unreliable* when κ < 0.4 (below "moderate" on Landis &
Koch's 1977 scale, or undefined) or the flip rate exceeds 0.2; a claim that rests on such a judge cannot be
supported (`hold_on_unreliable_judge`, which `harness.plugin.fixtures.check` applies to every check).
"""
from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from typing import Any, Hashable, Sequence

import numpy as np

from harness.stats._effect import Effect, anytime_active, proportion_effect
from harness.stats._scipy import stats as _st
from harness.stats.kappa import kappa_sequence
from harness.stats.intervals import Interval, wilson_interval

__all__ = ["JudgeReliability", "KAPPA_FLOOR", "FLIP_CEILING", "accuracy", "cohen_kappa", "flip_effect", "flip_rate",
           "hold_on_unreliable_judge", "kappa_effect", "kappa_effect_at", "kappa_interval", "krippendorff_alpha",
           "majority_verdict", "recheck_effect", "recheck_flips"]

KAPPA_FLOOR = 0.4
FLIP_CEILING = 0.2


def cohen_kappa(a: Sequence[Hashable], b: Sequence[Hashable]) -> float:
    """Cohen's κ of two raters over the same items; nan when chance agreement is 1 or there are no items."""
    if len(a) != len(b):
        raise ValueError(f"raters rated different numbers of items: {len(a)} vs {len(b)}")
    n = len(a)
    if n == 0:
        return math.nan
    p_o = sum(x == y for x, y in zip(a, b)) / n
    ca, cb = Counter(a), Counter(b)
    p_e = sum(ca[c] * cb[c] for c in ca) / (n * n)
    return math.nan if p_e == 1.0 else (p_o - p_e) / (1.0 - p_e)


def kappa_interval(a: Sequence[Hashable], b: Sequence[Hashable], *, confidence: float = 0.95,
                   n_resamples: int = 2000, seed: int = 0) -> Interval:
    """Percentile bootstrap interval of κ (items resampled with replacement; resamples with undefined κ
    dropped)."""
    n = len(a)
    if n < 2:
        return (math.nan, math.nan)
    rng = np.random.default_rng(seed)
    xa, xb = np.asarray(a, dtype=object), np.asarray(b, dtype=object)
    ks = [cohen_kappa(list(xa[i]), list(xb[i])) for i in (rng.integers(0, n, n) for _ in range(n_resamples))]
    defined = np.array([k for k in ks if not math.isnan(k)])
    if not len(defined):
        return (math.nan, math.nan)
    tail = (1 - confidence) / 2 * 100
    return (float(np.percentile(defined, tail)), float(np.percentile(defined, 100 - tail)))


def accuracy(predicted: Sequence[Hashable], labels: Sequence[Hashable], *,
             confidence: float = 0.95) -> tuple[float, Interval]:
    """Share of items on which the judge gives the label, with its Wilson interval."""
    if len(predicted) != len(labels):
        raise ValueError(f"{len(predicted)} verdicts for {len(labels)} labels")
    k = sum(p == y for p, y in zip(predicted, labels))
    n = len(labels)
    return (k / n if n else math.nan), wilson_interval(k, n, confidence=confidence)


def flip_rate(first: Sequence[Hashable], second: Sequence[Hashable]) -> float:
    """Share of items whose verdict differs between two rulings; nan without items."""
    if len(first) != len(second):
        raise ValueError(f"{len(first)} first rulings for {len(second)} second ones")
    return sum(x != y for x, y in zip(first, second)) / len(first) if len(first) else math.nan


def flip_effect(first: Sequence[bool | None], second: Sequence[bool | None], *,
                confidence: float = 0.95) -> Effect:
    """The flip rate as a rate with its Wilson interval, over the items ruled on both times (None: a failed
    ruling), for a verdict on self-consistency."""
    if len(first) != len(second):
        raise ValueError(f"{len(first)} first rulings for {len(second)} second ones")
    return proportion_effect([x != y for x, y in zip(first, second) if x is not None and y is not None],
                             confidence=confidence)


def recheck_effect(rel: JudgeReliability, *, confidence: float = 0.95) -> Effect:
    """The flip rate the judge's flag reads (`JudgeReliability.flip_rate`, from `recheck_flips`: of the `flip_n`
    items the first ruling decided, the share a perturbed re-ruling did not reproduce, by a change, a failure or
    no perturbation) as a rate with its Wilson interval: a claim decided on it reports the figure, over the items,
    that the judge-reliability banner reports. No re-ruling (`flip_n` 0): a rate over no items (nan)."""
    k, n = int(rel.recheck.get("unconfirmed", 0)), rel.flip_n
    if n and rel.flip_rate is not None and abs(k / n - rel.flip_rate) > 1e-12:
        raise ValueError(f"{rel.judge}: {k} unconfirmed of {n} is not its flip rate {rel.flip_rate}")
    return proportion_effect([True] * k + [False] * (n - k), confidence=confidence)


def recheck_flips(first: Sequence[Hashable | None], second: Sequence[Hashable | None],
                  perturbed: Sequence[bool]) -> tuple[float, int, dict[str, int]]:
    """Over the items the first ruling decided (not None): the share whose verdict was not reproduced by a
    perturbed re-ruling, their number, and the counts by cause (`changed`, `failed`: the re-ruling gave no
    verdict, `unperturbed`: it repeated the first request); nan without a decided item."""
    if not len(first) == len(second) == len(perturbed):
        raise ValueError(f"{len(first)} first rulings, {len(second)} second ones, {len(perturbed)} perturbation flags")
    counts = {"changed": 0, "failed": 0, "unperturbed": 0}
    decided = [k for k, v in enumerate(first) if v is not None]
    for k in decided:
        if not perturbed[k]:
            counts["unperturbed"] += 1
        elif second[k] is None:
            counts["failed"] += 1
        elif second[k] != first[k]:
            counts["changed"] += 1
    n = len(decided)
    return (sum(counts.values()) / n if n else math.nan), n, counts


def krippendorff_alpha(ratings: Sequence[Sequence[Hashable | None]]) -> float:
    """Nominal α over `ratings[unit][rater]` (None: missing); units with fewer than two ratings are not
    pairable and are left out; nan when no disagreement is expected (one value only)."""
    coincidence: defaultdict[tuple[Hashable, Hashable], float] = defaultdict(float)
    for unit in ratings:
        values = [v for v in unit if v is not None]
        m = len(values)
        if m < 2:
            continue
        counts = Counter(values)
        for c in counts:
            for k in counts:
                pairs = counts[c] * (counts[k] - (c == k))
                if pairs:
                    coincidence[(c, k)] += pairs / (m - 1)
    n_c: defaultdict[Hashable, float] = defaultdict(float)
    for (c, _), v in coincidence.items():
        n_c[c] += v
    n = sum(n_c.values())
    if n <= 1:
        return math.nan
    d_o = sum(v for (c, k), v in coincidence.items() if c != k)
    d_e = sum(n_c[c] * n_c[k] for c in n_c for k in n_c if c != k)
    return math.nan if d_e == 0 else 1.0 - (n - 1) * d_o / d_e


def majority_verdict(ratings: Sequence[Sequence[Hashable | None]]) -> list[Hashable | None]:
    """Each unit's most frequent rating among those given; None on a tie or without ratings."""
    out: list[Hashable | None] = []
    for unit in ratings:
        top = Counter(v for v in unit if v is not None).most_common(2)
        out.append(None if not top or (len(top) == 2 and top[0][1] == top[1][1]) else top[0][0])
    return out


@dataclass
class JudgeReliability:
    """One judge's measured reliability on a labelled set, and whether it is flagged."""

    judge: str
    labelled_set: str
    n: int
    kappa: float
    kappa_ci: Interval
    accuracy: float
    accuracy_ci: Interval
    flip_rate: float | None = None
    flip_n: int = 0
    failures: int = 0  # failed rulings among the n items (counted in κ and accuracy as disagreements)
    temperature: float | None = None
    notes: dict[str, Any] = field(default_factory=dict)
    kappa_exact: bool = False  # one verdict for every item, labels varied: κ = 0 by construction, in every resample
    kappa_ruled: float = math.nan  # κ over the ruled items only (failed rulings left out), for comparison
    recheck: dict[str, Any] = field(default_factory=dict)  # the second ruling's perturbation and its flips by cause

    @property
    def reasons(self) -> list[str]:
        out = []
        if math.isnan(self.kappa) or self.kappa < KAPPA_FLOOR:
            failed = f" ({self.failures} failed rulings of {self.n} counted as disagreements)" if self.failures else ""
            out.append(f"κ = {self.kappa:.3g} < {KAPPA_FLOOR} against {self.labelled_set}'s labels{failed}")
        if self.flip_rate is not None and not math.isnan(self.flip_rate) and self.flip_rate > FLIP_CEILING:
            out.append(f"flip rate {self.flip_rate:.3g} > {FLIP_CEILING}")
        return out

    @property
    def unreliable(self) -> bool:
        return bool(self.reasons)

    def as_context(self) -> dict[str, Any]:
        d = asdict(self)
        d["kappa_ci"], d["accuracy_ci"] = list(self.kappa_ci), list(self.accuracy_ci)
        d["unreliable"], d["reasons"] = self.unreliable, self.reasons
        return d

    @classmethod
    def measure(cls, judge: str, labelled_set: str, verdicts: Sequence[bool | None], labels: Sequence[bool], *,
                second: Sequence[bool | None] | None = None, perturbed: Sequence[bool] | None = None,
                recheck: dict[str, Any] | None = None, temperature: float | None = None, seed: int = 0,
                **notes: Any) -> "JudgeReliability":
        """κ and accuracy over every item, a failed ruling (None) counted as a disagreement (`failures` of
        them); the flip rate (`recheck_flips`) from the `second` rulings and whether each was `perturbed`
        (required with `second`); `recheck` describes the perturbation. `kappa_exact` when the judge gave
        every item one verdict (a failure included) and the labels vary: κ is then exactly 0, not an estimate."""
        verdicts, labels = list(verdicts), list(labels)
        if len(verdicts) != len(labels):
            raise ValueError(f"{len(verdicts)} verdicts for {len(labels)} labels")
        ruled = [(v, y) for v, y in zip(verdicts, labels) if v is not None]
        acc, acc_ci = accuracy(verdicts, labels)
        flips, flip_n, described = None, 0, dict(recheck or {})
        if second is not None:
            if perturbed is None:
                raise ValueError("second rulings need `perturbed`: whether each re-ruling differed from the first "
                                 "request (harness.judge.llm_judge.perturbed)")
            flips, flip_n, counts = recheck_flips(verdicts, list(second), list(perturbed))
            described.update(counts, unconfirmed=sum(counts.values()))
        # one verdict everywhere: p_o = p_e on any items, so κ is 0 (or undefined) in every resample
        one_label = len(set(verdicts)) == 1 and len(set(labels)) > 1
        return cls(judge, labelled_set, len(verdicts), cohen_kappa(verdicts, labels),
                   kappa_interval(verdicts, labels, seed=seed), acc, acc_ci, flips, flip_n,
                   len(verdicts) - len(ruled), temperature, dict(notes), kappa_exact=one_label,
                   kappa_ruled=cohen_kappa([v for v, _ in ruled], [y for _, y in ruled]), recheck=described)


def kappa_effect(rel: JudgeReliability) -> Effect:
    """A judge's κ as an Effect for a verdict: its 95% bootstrap interval, the per-item SD that interval implies
    (width / (2·1.96) · √n, for the queries needed and the MDE), exact when the judge gave every item one label."""
    lo, hi = rel.kappa_ci
    sd = (hi - lo) / (2 * 1.959964) * math.sqrt(rel.n) if rel.n and math.isfinite(hi - lo) else math.nan
    return Effect("kappa", rel.kappa, rel.kappa_ci, rel.n, sd, interval_method="percentile bootstrap",
                  exact=rel.kappa_exact)


def kappa_effect_at(verdicts: Sequence[bool | None], labels: Sequence[bool], *, right_share: float,
                    confidence: float = 0.95, seed: int = 0, of_all: bool = True) -> Effect:
    """κ on these items as a verdict reads it at `confidence`: inside `anytime_intervals()` (a look of a claim decided
    in looks) its betting confidence sequence, the labels' shares taken as the design's `right_share`
    (`harness.stats.kappa.kappa_sequence`); else κ with its seeded percentile bootstrap interval, exact where the
    judge gave every item one verdict and the labels vary (as `kappa_effect`), but only where these are `of_all`
    the study's items (a prefix with one verdict says nothing of the items not yet ruled)."""
    if anytime_active():
        return kappa_sequence(verdicts, labels, right_share=right_share, confidence=confidence)
    v, y = list(verdicts), list(labels)
    lo, hi = kappa_interval(v, y, confidence=confidence, seed=seed)
    n = len(v)
    z = float(_st.norm.ppf(0.5 + confidence / 2))
    sd = (hi - lo) / (2 * z) * math.sqrt(n) if n and math.isfinite(hi - lo) else math.nan
    return Effect("kappa", cohen_kappa(v, y), (lo, hi), n, sd, confidence=confidence,
                  interval_method="percentile bootstrap", exact=of_all and len(set(v)) == 1 and len(set(y)) > 1)


def hold_on_unreliable_judge(record: dict[str, Any], judges: dict[str, Any] | list[dict[str, Any]] | None) -> None:
    """A claim that rests on a judge flagged unreliable (one judge's `JudgeReliability.as_context()`, or a list
    of them) cannot be supported: a check record reading supported or pass becomes inconclusive, with the
    judge's reasons. Refuted and failed verdicts stand."""
    flagged = [j for j in (judges if isinstance(judges, list) else [judges] if judges else []) if j.get("unreliable")]
    if flagged and record["verdict"] in ("supported", "pass"):
        why = "; ".join(f"{j['judge']}: {', '.join(j['reasons'])}" for j in flagged)
        was, record["verdict"] = record["verdict"], "inconclusive"
        record["decided"] = {**record.get("decided", {}), "verdict": "inconclusive",
                             "reason": f"would read {was}, but rests on a judge flagged unreliable ({why})",
                             "queries_needed": "never",
                             "needed_for": "more items are ruled by the same unreliable judge; a reliable judge may "
                                           "decide it"}
