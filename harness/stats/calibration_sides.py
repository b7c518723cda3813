"""Per-side calibration of sequential verdicts (issue 36): the truth set exactly at a claim's threshold on real
per-query scores, false "supported" and false "refuted" counted separately, per look and overall, with the coverage
of the interval the claim stopped with; and the truth moved 0.5, 1 and 2 MDEs either side, for power.

A population is a real set of per-query pairs (candidate, baseline) or outcomes. Its truth is moved to a target by
exponential tilting (Efron 1981): each query gets weight ∝ exp(λ·x_i), x_i the claim's per-query contrast (c − b;
c − (1 + θ)·b for a ratio θ + 1; u − θ·w for Cohen's κ, `kappa_population`; the outcome for a rate), λ solved so the weighted mean is the target. The tilted
population is the distribution closest to the real one (Kullback-Leibler) with that truth: same values, same ties,
same skew up to the shift. Queries are then drawn with replacement from it, as a claim's random sample.

Verdicts come from `harness.stats._sides_rules` (vectorised copies of the production path, tested equal to it). A
before/after pair: `BEFORE` (main's intervals on the RCI design) and `AFTER` (the betting confidence sequence on the
anytime design); `CANDIDATES` on the RCI design are the alternatives the choice was made among.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
from harness.stats._scipy import optimize as _opt
from harness.stats._scipy import stats as _st

from harness.stats import _sides_rules as rules
from harness.stats.sequential import SequentialDesign

KINDS = ("difference", "relative", "binary", "proportion", "kappa")
NOMINAL_SIDE = 0.025  # each side of a 95% two-sided rule


@dataclass(frozen=True)
class Population:
    """Real per-query values of one claim kind: `candidate` and `baseline` scores (a rate: `candidate` outcomes)."""

    name: str
    kind: str
    candidate: np.ndarray
    baseline: np.ndarray | None = None
    bounds: tuple[float, float] = (0.0, 1.0)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown claim kind {self.kind!r}; expected one of {KINDS}")
        if (self.baseline is None) != (self.kind == "proportion"):
            raise ValueError("a rate has outcomes only; every other kind has candidate and baseline scores")

    def contrast(self, truth: float) -> np.ndarray:
        """The per-query values whose mean is `truth` exactly when the population's effect is `truth` (for a ratio:
        c − (1 + truth)·b, mean 0; for κ, c = u and b = w per item: u − truth·w, mean 0)."""
        c = np.asarray(self.candidate, dtype=np.float64)
        if self.kind == "proportion":
            return c
        b = np.asarray(self.baseline, dtype=np.float64)
        if self.kind == "kappa":
            return c - truth * b
        return c - (1.0 + truth) * b if self.kind == "relative" else c - b

    def effect(self, w: np.ndarray | None = None) -> float:
        """The population's effect under weights `w` (default: the real, equal weights)."""
        w = np.full(len(self.candidate), 1.0 / len(self.candidate)) if w is None else w
        c = float(np.dot(w, self.candidate))
        if self.kind == "proportion":
            return c
        assert self.baseline is not None  # every kind but a rate has baseline scores (__post_init__)
        b = float(np.dot(w, self.baseline))
        if self.kind == "kappa":
            return c / b
        return c / b - 1.0 if self.kind == "relative" else c - b


def kappa_population(name: str, verdicts: Sequence[bool | None], labels: Sequence[bool],
                     right_share: float = 0.5) -> Population:
    """A judge's real rulings against labels as a κ population: each item's (u, w) (`harness.stats.kappa.kappa_terms`,
    the labels' share taken as the design's `right_share`), bounds (−m, 1) with m the larger label share."""
    from harness.stats.kappa import kappa_terms

    u, w = kappa_terms(verdicts, labels, right_share)
    return Population(name, "kappa", u, w, bounds=(-max(right_share, 1.0 - right_share), 1.0))


def tilt(x: np.ndarray, target: float) -> np.ndarray:
    """Weights w_i ∝ exp(λ·x_i) with Σ w_i·x_i = target (exponential tilting); the target must lie strictly inside
    the values' range."""
    x = np.asarray(x, dtype=np.float64)
    lo, hi = float(x.min()), float(x.max())
    if not lo < target < hi:
        raise ValueError(f"a tilted mean must lie strictly inside the values' range ({lo}, {hi}), got {target}")
    z = (x - x.mean()) / (x.std() or 1.0)

    def weights(lam: float) -> np.ndarray:
        e = np.exp(lam * z - np.max(lam * z))
        return np.asarray(e / e.sum(), dtype=np.float64)

    lam = _opt.brentq(lambda t: float(np.dot(weights(t), x)) - target, -60.0, 60.0, xtol=1e-13)
    return weights(lam)


def truth_weights(pop: Population, truth: float) -> np.ndarray:
    """The population tilted so that its effect is exactly `truth`."""
    x = pop.contrast(truth)
    return tilt(x, 0.0 if pop.kind in ("relative", "kappa") else truth)


def shape(pop: Population, truth: float) -> dict[str, float]:
    """Skewness and share of ties (the most common value's share: for paired scores, pairs that tied) of the
    population's per-query contrast at `truth`, as the tilted population has them."""
    w = truth_weights(pop, truth)
    x = pop.contrast(truth)
    m = float(np.dot(w, x))
    m2, m3 = float(np.dot(w, (x - m) ** 2)), float(np.dot(w, (x - m) ** 3))
    vals, inv = np.unique(np.round(x, 12), return_inverse=True)
    mass = np.bincount(inv, weights=w)
    if pop.kind in ("proportion", "kappa"):  # the most common value's share (κ: of an item's contrast)
        tie = float(mass.max())
    else:
        tied = np.isclose(np.asarray(pop.candidate, float), np.asarray(pop.baseline, float), atol=1e-12)
        tie = float(w[tied].sum())
    if pop.baseline is None or pop.kind == "kappa":
        real_tie = float(np.max(np.unique(x, return_counts=True)[1]) / len(x))
    else:
        real_tie = float(np.mean(np.isclose(pop.candidate, pop.baseline, atol=1e-12)))
    return {"skewness": m3 / m2 ** 1.5 if m2 > 0 else 0.0, "tie_share": tie, "sd": m2 ** 0.5,
            "real_skewness": float(_st.skew(x)), "real_tie_share": real_tie}


def draw(pop: Population, truth: float, n: int, sims: int, rng: np.random.Generator
         ) -> tuple[np.ndarray, np.ndarray | None]:
    """`sims` claims of `n` queries drawn with replacement from the population tilted to `truth`."""
    idx = rng.choice(len(pop.candidate), size=(sims, n), p=truth_weights(pop, truth))
    c = np.asarray(pop.candidate, dtype=np.float64)[idx]
    return c, (None if pop.baseline is None else np.asarray(pop.baseline, dtype=np.float64)[idx])


@dataclass(frozen=True)
class SideResult:
    """One study: the rate a look stopped the claim supported / refuted (per look, summing to the overall rate), the
    coverage of the stopping look's interval (at the threshold; nan elsewhere) and the mean queries used."""

    population: str
    kind: str
    rule: str
    looks: tuple[int, ...]
    truth: float
    threshold: float
    sims: int
    supported: tuple[float, ...]
    refuted: tuple[float, ...]
    coverage: float
    mean_queries: float

    @property
    def false_supported(self) -> float:
        return float(sum(self.supported))

    @property
    def false_refuted(self) -> float:
        return float(sum(self.refuted))

    def as_context(self) -> dict[str, Any]:
        return {"population": self.population, "kind": self.kind, "rule": self.rule, "looks": list(self.looks),
                "truth": self.truth, "threshold": self.threshold, "sims": self.sims,
                "supported_per_look": list(self.supported), "refuted_per_look": list(self.refuted),
                "supported": self.false_supported, "refuted": self.false_refuted, "coverage": self.coverage,
                "mean_queries": self.mean_queries}


def run_rule(rule: rules.Rule, A: np.ndarray, B: np.ndarray | None, looks: Sequence[int],
             confidences: Sequence[float], comparator: str, threshold: float, bounds: tuple[float, float],
             truth: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The sequential rule over rows of drawn claims: per look the share stopped supported and refuted, then the
    stopping look's coverage of `truth` per row and the queries each row used."""
    sims = A.shape[0]
    active = np.ones(sims, dtype=bool)
    covered = np.zeros(sims, dtype=bool)
    used = np.zeros(sims)
    sup_k, ref_k = [], []
    for k, (n, conf) in enumerate(zip(looks, confidences)):
        lo, hi, blocked, reach = rule(A[:, :n], None if B is None else B[:, :n], conf, threshold, bounds)
        sup, ref = rules.verdicts(lo, hi, blocked, reach, comparator, threshold)
        sup, ref = sup & active, ref & active
        stop = sup | ref | (active & (k == len(looks) - 1))
        covered[stop] = (lo[stop] <= truth) & (truth <= hi[stop])
        used[stop] = n
        sup_k.append(float(sup.mean()))
        ref_k.append(float(ref.mean()))
        active &= ~stop
    return np.array(sup_k), np.array(ref_k), covered, used


def rule_of(name: str, kind: str) -> tuple[rules.Rule, str]:
    """The vectorised rule `name` ("before", "after" or a candidate) for a claim kind, and its boundary."""
    if name == "before":
        return rules.BEFORE[kind], "rci"
    if name == "after":
        return rules.AFTER[kind], "anytime"
    if name in rules.CANDIDATES and kind in rules.CANDIDATES[name]:
        return rules.CANDIDATES[name][kind], "rci"
    raise KeyError(f"no rule {name!r} for a {kind} claim")


def side_study(pop: Population, design_looks: Sequence[int], threshold: float, *, rule: str = "after",
               comparator: str = ">=", truth: float | None = None, sims: int = 4000, seed: int = 0,
               alpha: float = 0.05) -> SideResult:
    """Claims drawn from `pop` tilted to `truth` (default: the threshold) and decided look by look by `rule`."""
    truth = threshold if truth is None else truth
    fn, boundary = rule_of(rule, pop.kind)
    design = SequentialDesign(tuple(design_looks), alpha=alpha, boundary=boundary)
    A, B = draw(pop, truth, design.looks[-1], sims, np.random.default_rng(seed))
    sup, ref, covered, used = run_rule(fn, A, B, design.looks, design.confidences, comparator, threshold,
                                       pop.bounds, truth)
    return SideResult(pop.name, pop.kind, rule, design.looks, truth, threshold, sims, tuple(sup.tolist()),
                      tuple(ref.tolist()), float(covered.mean()) if truth == threshold else float("nan"),
                      float(used.mean()))


def mde(pop: Population, threshold: float, n: int, *, confidence: float = 0.95, power: float = 0.8) -> float:
    """The fixed-n t rule's minimum detectable effect at n for this population at the threshold: (t_{(1+c)/2} +
    t_{power})·σ/√n, σ the tilted population's SD of the contrast (over the baseline mean for a ratio)."""
    w = truth_weights(pop, threshold)
    x = pop.contrast(threshold)
    sd = float(np.sqrt(np.dot(w, (x - np.dot(w, x)) ** 2)))
    if pop.kind in ("relative", "kappa"):
        assert pop.baseline is not None  # a ratio has baseline scores (Population.__post_init__)
        sd /= float(np.dot(w, pop.baseline))
    return float((_st.t.ppf(0.5 + confidence / 2, n - 1) + _st.t.ppf(power, n - 1)) * sd / np.sqrt(n))


def side_se(sims: int, rate: float = NOMINAL_SIDE) -> float:
    """Monte Carlo SE of a per-side rate estimated from `sims` claims."""
    return float(np.sqrt(rate * (1 - rate) / sims))


# ---------------------------------------------------------------- the error gate (harness.stats._verdict.decide)
def error_gate_rate(failure_rate: float, looks: Sequence[int], *, every_look: bool = False, sims: int = 20000,
                    seed: int = 0, max_rate: float = 0.10, confidence: float = 0.975) -> float:
    """Share of claims the error gate stops with "error" when each query's arms fail independently with
    `failure_rate` and nothing else decides: at the last look a rate above `max_rate`; at an interim look (unless
    `every_look`, the gate before issue 36) a one-sided Clopper-Pearson lower bound above it."""
    rng = np.random.default_rng(seed)
    F = rng.random((sims, looks[-1])) < failure_rate
    hit = np.zeros(sims, dtype=bool)
    for k, n in enumerate(looks):
        errors = F[:, :n].sum(axis=1)
        over = errors / n > max_rate
        if not every_look and k < len(looks) - 1:
            with np.errstate(invalid="ignore"):
                lower = np.where(errors > 0, _st.beta.ppf(1 - confidence, np.maximum(errors, 1), n - errors + 1), 0.0)
            over &= lower > max_rate
        hit |= over
    return float(hit.mean())


def fixed_n_error_rate(failure_rate: float, n: int, max_rate: float = 0.10) -> float:
    """P(errors/n > max_rate) for a claim decided once on n queries (binomial)."""
    k = int(np.floor(max_rate * n + 1e-12))
    return float(_st.binom.sf(k, n, failure_rate))
