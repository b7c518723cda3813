"""Three-valued verdicts for comparative claims, the queries still needed to decide one, and the MDE.

A claim `effect <comparator> threshold` (comparator >=, >, <= or <) is decided by its declared rule:

- `ci`: **supported** when the whole confidence interval satisfies the claim, **refuted** when the whole
  interval violates it, **inconclusive** otherwise;
- `test`: **supported** when the named test is significant at α (Holm-adjusted over the run's comparative
  claims when the report decides) *and* the estimate satisfies the claim; **refuted** when the whole interval
  violates it; **inconclusive** otherwise (e.g. RET-GATE-1: McNemar p < 0.15 and ≥ +4 points);
- `estimate`: the point value against the threshold (pass / fail), for deterministic values
  (`decide_estimate`).

A zero-width interval reads inconclusive (a degenerate sample: every paired difference equal), unless the
producer marks the quantity `Effect.exact`, constant by construction (κ of a judge that gives every item one
label is exactly 0): then its value decides, refuted on the violating side, supported on the other. Pairs that
all tied on a bounded metric carry the ties interval (`Effect.interval_method == "ties"`), decided like any
other interval; the reason says the pairs tied.

`untestable` marks a claim the data cannot test at all, whatever was measured: no pairs, an undefined
estimate (a relative effect over a baseline mean of 0), or a threshold outside what the metric can still reach
over the baseline (`Effect.attainable`); it reads inconclusive, never refuted. Reasons name only the
measurement (no judge, technique or model is presumed to have taken part). A claim whose arms fell
back (HyDE to the raw query, fusion to the original query alone, RET skipped, an LLM error) on more than
`MAX_FALLBACK_RATE` of its queries measured the fallback, not the technique: it cannot be supported, and a point
estimate measured on such a run cannot pass (both read inconclusive). One whose arms *failed* (an LLM error, not
a designed fallback) on more than that share reads **error**, a fourth verdict that fails the test: what was
measured is the failure, so neither supported, refuted nor inconclusive applies. A claim whose catalogue row
asks at least `min_n` items cannot pass or be supported on fewer (`below_min_n`: inconclusive, `min_n` needed).

A relative claim (mean(c)/mean(b) − 1 vs θ0) whose effect kept its pairs is decided on the linear contrast
c − (1 + θ0)·b against 0 (Fieller 1954; `harness.stats._effect.relative_contrast`), not on the ratio's delta-method
interval, whose two sides err unequally; a κ sequence likewise on u − θ0·w (`harness.stats.kappa`). The error gate at an interim look of a sequential claim needs more than a
rate above `MAX_FALLBACK_RATE`: the one-sided Clopper–Pearson lower bound (`ERROR_GATE_CONFIDENCE`) must exceed it, so
that looking several times does not add false "error" verdicts. The queries needed for an undecided claim are those a
new fixed-n study needs for 80% power at the observed distance from the threshold, with the SD at its one-sided 80%
upper confidence limit (`queries_needed`).
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from functools import lru_cache
from typing import Any, Literal

from harness.stats._scipy import stats as _st

from harness.stats._effect import Effect, relative_contrast
from harness.stats.kappa import kappa_contrast
from harness.stats.intervals import clopper_pearson_lower, ties_share

# a verdict: three-valued for comparative claims (plus `error`), pass / fail for a point estimate
VerdictName = Literal["supported", "refuted", "inconclusive", "error", "pass", "fail"]
DecisionRule = Literal["ci", "test", "estimate"]
TestName = Literal["t", "permutation", "wilcoxon", "mcnemar"]
DirectionalComparator = Literal[">=", ">", "<=", "<"]
# every comparator a catalogue spec may use (harness.catalogue); only the directional ones decide a CI or a test
Comparator = Literal[">=", ">", "<=", "<", "==", "!=", "in", "between"]

RULES: tuple[DecisionRule, ...] = ("ci", "test", "estimate")
TESTS: tuple[TestName, ...] = ("t", "permutation", "wilcoxon", "mcnemar")
DIRECTIONAL: tuple[DirectionalComparator, ...] = (">=", ">", "<=", "<")
_CAP = 10**9
MAX_FALLBACK_RATE = 0.10
ERROR_GATE_CONFIDENCE = 0.975  # one-sided: an interim look says "error" only when the failure rate surely exceeds 10%
POWER = 0.8  # the power `queries_needed` plans for


@dataclass(frozen=True)
class Decision:
    """How a spec's verdict is decided (the catalogue's `decision` field)."""

    rule: DecisionRule = "estimate"
    test: TestName | None = None
    alpha: float = 0.05
    confidence: float = 0.95

    @property
    def comparative(self) -> bool:
        return self.rule != "estimate"

    def describe(self) -> str:
        if self.rule == "ci":
            return f"{self.confidence:.0%} CI vs threshold"
        if self.rule == "test":
            return f"{self.test} p < {self.alpha:g} (Holm) and estimate vs threshold"
        return "point estimate vs threshold"


@dataclass(frozen=True)
class Verdict:
    verdict: VerdictName
    reason: str
    queries_needed: float | None = None
    mde: float | None = None
    untestable: bool = False
    # why `queries_needed` is what it is, where no power calculation gave it; with no figure, "unknown: <why>"
    needed_for: str | None = None

    def as_context(self) -> dict[str, Any]:
        """JSON-safe: an infinite number of queries needed (estimate exactly at the threshold) reads 'never'."""
        d = asdict(self)
        if isinstance(self.queries_needed, float) and math.isinf(self.queries_needed):
            d["queries_needed"] = "never"
        return d


def _satisfies(x: float, comparator: Comparator, threshold: float) -> bool:
    return {">=": x >= threshold, ">": x > threshold, "<=": x <= threshold, "<": x < threshold}[comparator]


@lru_cache(maxsize=4096)
def _quantile(dist: str, q: float, df: int | None = None) -> float:
    """scipy's `ppf` of the normal (`df` None), Student-t or χ² distribution, remembered: a verdict reads the same
    few quantiles over and over (every look of every claim, and the search for the queries needed)."""
    if dist == "norm":
        return float(_st.norm.ppf(q))
    return float((_st.t if dist == "t" else _st.chi2).ppf(q, df))


def queries_needed(sd: float, margin: float, *, confidence: float = 0.95, power: float = POWER,
                   n: int | None = None) -> float | None:
    """Queries a new fixed-n study needs for `power` (80%) to decide a claim whose true distance from the threshold is
    `margin`: the smallest n with `minimum_detectable_effect(sd, n)` ≤ margin, i.e.
    (t_{(1+c)/2, n−1} + t_{power, n−1})·sd/√n ≤ margin. Given the `n` the SD was estimated on, the SD is first raised
    to its one-sided 80% upper confidence limit sd·√((n − 1)/χ²_{0.2, n−1}), so the count errs high rather than low.
    None when sd is unknown; inf when the margin is 0 (never decidable)."""
    if sd is None or not math.isfinite(sd) or not math.isfinite(margin):
        return None
    if margin <= 0:
        return float("inf")
    if n is not None and n > 1:
        sd = sd * math.sqrt((n - 1) / _quantile("chi2", 1 - POWER, n - 1))
    if sd == 0:
        return 2.0
    z = _quantile("norm", 0.5 + confidence / 2) + _quantile("norm", power)
    m = max(2, math.ceil((z * sd / margin) ** 2))
    if m > _CAP:
        return float("inf")
    while minimum_detectable_effect(sd, m, confidence=confidence, power=power) > margin:
        m += 1
    return float(m)


def minimum_detectable_effect(sd: float, n: int, *, confidence: float = 0.95, power: float = 0.8) -> float:
    """Smallest true distance from the threshold that the CI rule decides with probability `power` at n:
    (t_{(1+c)/2, n-1} + t_{power, n-1})·sd/√n (the interval must clear the threshold on one side)."""
    if n < 2 or sd is None or not math.isfinite(sd):
        return float("inf")
    return float((_quantile("t", 0.5 + confidence / 2, n - 1) + _quantile("t", power, n - 1)) * sd / math.sqrt(n))


def decide(effect: Effect, comparator: Comparator, threshold: float, decision: Decision, *,
           p_value: float | None = None, fallback_rate: float | None = None,
           error_rate: float | None = None, interim: bool = False) -> Verdict:
    """The verdict of `effect comparator threshold` under `decision` (`p_value`: the Holm-adjusted p where
    the caller has it; else the effect's own p of the decision's test). `fallback_rate`: the share of queries
    on which either arm fell back or failed; above `MAX_FALLBACK_RATE` a supported verdict is withheld.
    `error_rate`: the share on which an arm's LLM call failed; above `MAX_FALLBACK_RATE` the verdict is error, except
    at an `interim` look of a sequential claim, where the rate's one-sided Clopper–Pearson lower bound
    (`ERROR_GATE_CONFIDENCE`) must exceed it (else the claim draws its next look)."""
    if _error_gate(error_rate, effect.n, interim):
        how = (f"its one-sided {ERROR_GATE_CONFIDENCE:.1%} Clopper-Pearson lower bound exceeds "
               f"{MAX_FALLBACK_RATE:.0%} at an interim look" if interim else f"> {MAX_FALLBACK_RATE:.0%}")
        return Verdict("error", f"the arms' model calls failed on {error_rate:.0%} of queries ({how}): the failures "
                                "were measured, not the technique (see the run's errors: the model, its key or its "
                                "server)")
    v = _decide(kappa_contrast(relative_contrast(effect, threshold), threshold), comparator, threshold, decision, p_value)
    if fallback_rate is None or not fallback_rate > MAX_FALLBACK_RATE:
        return v
    if (v.verdict == "inconclusive" and not v.untestable and math.isfinite(effect.estimate)
            and _satisfies(effect.estimate, comparator, threshold)):
        # at the estimate measured, more queries lead to a supported verdict, which this rate withholds: never
        return Verdict("inconclusive", v.reason, float("inf"), v.mde, False, _fallback_needs(fallback_rate))
    if v.verdict == "supported":
        return Verdict("inconclusive", f"{v.reason}, but the arms fell back or failed on {fallback_rate:.0%} of "
                                       f"queries (> {MAX_FALLBACK_RATE:.0%}): the fallback was measured",
                       queries_needed=float("inf"), mde=v.mde, needed_for=_fallback_needs(fallback_rate))
    return v


def _fallback_needs(fallback_rate: float) -> str:
    """Why a verdict withheld for the fallback needs no number of queries: more of them measure it too."""
    return (f"at a fallback rate of {fallback_rate:.0%}, more queries measure the fallback, not the technique; a "
            "model or set-up that falls back less may decide it")


def _error_gate(error_rate: float | None, n: int, interim: bool) -> bool:
    """Whether the failures decide the claim: a rate above `MAX_FALLBACK_RATE` at the last (or only) look; at an
    interim look, a one-sided Clopper–Pearson lower bound above it."""
    if error_rate is None or not math.isfinite(error_rate) or error_rate <= MAX_FALLBACK_RATE:
        return False
    if not interim:
        return True
    return n > 0 and clopper_pearson_lower(round(error_rate * n), n, confidence=ERROR_GATE_CONFIDENCE) > MAX_FALLBACK_RATE


def decide_estimate(holds: bool, *, fallback_rate: float | None = None) -> Verdict:
    """The verdict of a point estimate (`holds`: it satisfies the claim); a pass measured on a run that fell back
    or failed on more than `MAX_FALLBACK_RATE` of its queries is withheld (inconclusive), a fail stands."""
    if not holds:
        return Verdict("fail", "the estimate does not satisfy the claim")
    if fallback_rate is not None and fallback_rate > MAX_FALLBACK_RATE:
        return Verdict("inconclusive", f"the estimate satisfies the claim, but the technique fell back or failed on "
                                       f"{fallback_rate:.0%} of queries (> {MAX_FALLBACK_RATE:.0%}): the fallback "
                                       "was measured", float("inf"), needed_for=_fallback_needs(fallback_rate))
    return Verdict("pass", "the estimate satisfies the claim")


def below_min_n(v: Verdict, n: int | None, min_n: int | None) -> Verdict:
    """A pass or supported verdict measured on fewer than `min_n` items (the catalogue's `min_n`) reads
    inconclusive, `min_n` the items needed; other verdicts stand (an interval that already violates the claim
    refutes it at any n). Raises when the spec asks a minimum and the check gave no n."""
    if min_n is None:
        return v
    if n is None:
        raise TypeError(f"the spec asks at least {min_n} items: pass the n the value was measured on")
    if n >= min_n or v.verdict not in ("pass", "supported"):
        return v
    return Verdict("inconclusive", f"{v.reason}, but on {n} items: the spec asks at least {min_n}, so it cannot "
                                   f"{'pass' if v.verdict == 'pass' else 'support the claim'} ({min_n - n} more needed)",
                   float(min_n), v.mde, v.untestable, f"the spec asks at least {min_n} items")


def _decide(effect: Effect, comparator: Comparator, threshold: float, decision: Decision,
            p_value: float | None) -> Verdict:
    if comparator not in DIRECTIONAL:
        raise ValueError(f"comparator {comparator!r} cannot be decided by a CI or test; use one of {DIRECTIONAL}")
    est, (lo, hi) = effect.estimate, effect.ci
    margin = abs(est - threshold) if math.isfinite(est) else float("nan")
    needed = queries_needed(effect.sd, margin, confidence=decision.confidence, n=effect.n)
    mde = minimum_detectable_effect(effect.sd, effect.n, confidence=decision.confidence)
    conf = effect.confidence  # the interval's own level (a sequential look's repeated interval is wider)

    contrast = ("" if "linear contrast" not in effect.interval_method else
                f"decided on the linear contrast u - {threshold:g}·w against 0 (κ = mean(u)/mean(w), the labels' share "
                "fixed by design), its interval over mean(w) shown on κ's scale; " if effect.kind == "kappa" else
                f"decided on the linear contrast c - (1 + {threshold:g})·b against 0 (Fieller), its interval over the "
                "baseline mean shown on the ratio's scale; ")
    tied = contrast + (f"all {effect.n} pairs tied, so the interval is the ties interval (queries like these could differ on "
            f"at most {ties_share(effect.n, confidence=conf):.1%} of them, each by at most the metric's range); "
            if effect.interval_method == "ties" and effect.n else "")

    def out(verdict: VerdictName, reason: str, untestable: bool = False) -> Verdict:
        if untestable:  # no number of queries decides it on this data
            return Verdict(verdict, tied + reason, float("inf"), mde, True, "untestable on this data")
        if verdict != "inconclusive":
            return Verdict(verdict, tied + reason, None, mde)
        never = None
        if needed is not None and math.isinf(needed):  # what "never" means here
            never = "estimate = threshold" if margin == 0 else "more than a billion queries"
        return Verdict(verdict, tied + reason, needed, mde, False, never)

    if effect.n == 0:
        return Verdict("inconclusive", "no paired observations", float("inf"), float("inf"), True,
                       "untestable on this data")
    if not math.isfinite(est):
        return Verdict("inconclusive", f"estimate is {est} (relative effect over a baseline mean of 0)", float("inf"),
                       mde, True, "untestable on this data")
    greater = comparator in (">=", ">")
    if effect.attainable is not None:
        reach = effect.attainable[1] if greater else effect.attainable[0]
        if not _satisfies(reach, comparator, threshold):
            return out("inconclusive", f"untestable on this data: the metric can change by at most {reach:+.4g} "
                                       f"over the baseline, the claim needs {comparator} {threshold:g}", True)
    if math.isnan(lo) or math.isnan(hi):
        v = out("inconclusive", "interval undefined")
        return v if v.queries_needed is not None else replace(
            v, needed_for=f"unknown: no interval from {effect.n} observation{'' if effect.n == 1 else 's'}, so no "
                          "spread to plan a study from")
    if lo == hi and effect.exact:  # constant by construction: the value is known, nothing is left to test
        ok = _satisfies(lo, comparator, threshold)
        return out("supported" if ok else "refuted", f"{effect.kind} is exactly {lo:.4g} by construction (every "
                                                     f"resample equal), which {'satisfies' if ok else 'violates'} "
                                                     f"{comparator} {threshold:g}")
    if lo == hi:  # every paired difference equal (sd 0): a zero-width interval is no measure of uncertainty
        return Verdict("inconclusive", f"every paired difference is {est:.4g} (sd 0) over {effect.n} pairs: the "
                                       f"{conf * 100:.4g}% CI [{lo:.4g}, {hi:.4g}] is degenerate (zero width "
                                       "measures no uncertainty) and cannot decide", None, mde, False,
                       "unknown: the paired differences have no spread (sd 0) to plan a study from")
    if not _satisfies(lo, comparator, threshold) and not _satisfies(hi, comparator, threshold):
        return out("refuted", f"the whole {conf * 100:.4g}% CI [{lo:.4g}, {hi:.4g}] violates {comparator} {threshold:g}")
    if decision.rule == "ci":
        if _satisfies(lo, comparator, threshold) and _satisfies(hi, comparator, threshold):
            return out("supported", f"the whole {conf * 100:.4g}% CI [{lo:.4g}, {hi:.4g}] satisfies {comparator} {threshold:g}")
        return out("inconclusive", f"the {conf * 100:.4g}% CI [{lo:.4g}, {hi:.4g}] straddles {threshold:g}")
    if decision.rule == "test":
        p = p_value if p_value is not None else effect.p_values.get(decision.test or "")
        if p is None or math.isnan(p):
            return out("inconclusive", f"no {decision.test} p-value")
        if p < decision.alpha and _satisfies(est, comparator, threshold):
            return out("supported", f"{decision.test} p = {p:.3g} < {decision.alpha:g} and estimate {est:.4g} "
                                    f"{comparator} {threshold:g}")
        why = f"{decision.test} p = {p:.3g}" + (f" ≥ {decision.alpha:g}" if p >= decision.alpha else "")
        if not _satisfies(est, comparator, threshold):
            why += f"; estimate {est:.4g} not {comparator} {threshold:g}"
        return out("inconclusive", why)
    raise ValueError(f"decision rule {decision.rule!r} does not give a three-valued verdict")
