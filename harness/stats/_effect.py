"""A measured effect and everything a verdict needs: estimate, interval, n, spread, p-values,
queries improved / unchanged / degraded and the range the metric can still reach.

`paired_effect` compares two systems' per-query scores (same queries, same order) as a mean difference
or as a relative improvement of the means; `proportion_effect` is a one-sample rate (e.g. abstention).
The interval method for each kind is the one the calibration on real topics chose (`VERDICT_INTERVAL`).
"""
from __future__ import annotations

import contextlib
import contextvars
import math
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Iterator

import numpy as np
from harness.stats._scipy import stats as _st

from harness.stats.betting import betting_covers, betting_interval, inverted_interval
from harness.stats.intervals import (
    Bools, Floats, Interval, agresti_min_interval, agresti_min_sd, bca_from_replicates, bca_interval, fieller_interval, interval_sd,
    percentile_interval, t_interval, ties_interval, wilson_interval,
)

# Fixed-n verdicts: chosen by benchmarks/test_calibration.py on Cranfield (dense, BM25, hybrid; 225 topics). A
# relative effect's "t" is Fieller's interval of the ratio, decided on the linear contrast (`relative_contrast`);
# docs/verdicts.md#which-interval-which-test.
VERDICT_INTERVAL = {"difference": "t", "relative": "t", "proportion": "wilson"}
# Sequential verdicts (inside `anytime_intervals()`, which `run_sequential` opens for an anytime design): the betting
# confidence sequence of bounded values, which holds each side at α/2 at every look on every population the per-side
# calibration measured (docs/statistics.md); a metric without bounds keeps the fixed-n methods.
ANYTIME_METHODS = ("betting",)
PRIMARY_TEST = {"difference": "t", "relative": "t", "binary": "mcnemar"}
_TIE = 1e-12
_ANYTIME: contextvars.ContextVar[bool] = contextvars.ContextVar("anytime_intervals", default=False)


@contextlib.contextmanager
def anytime_intervals() -> Iterator[None]:
    """Inside it, effects of bounded values default to the betting confidence sequence (anytime-valid), whatever
    their kind: what a look of an anytime sequential design measures (`harness.stats.sequential.run_sequential`)."""
    token = _ANYTIME.set(True)
    try:
        yield
    finally:
        _ANYTIME.reset(token)


def anytime_active() -> bool:
    return _ANYTIME.get()


@dataclass(frozen=True)
class Effect:
    """A measured effect. `sd` is the standard deviation of the per-query (linearised) values the interval
    is built on, so `queries_needed` and `mde` can extrapolate; `attainable` is the (min, max) effect the
    metric's bounds still allow over the baseline (None when unbounded). `exact`: the producer knows the
    quantity is constant by construction, whatever the sample (e.g. κ of a judge that gives one label to every
    item is 0 in every resample), so a zero-width interval is its true value, not a degenerate sample."""

    kind: str
    estimate: float
    ci: Interval
    n: int
    sd: float
    confidence: float = 0.95
    interval_method: str = "t"
    p_values: dict[str, float] = field(default_factory=dict)
    primary_test: str | None = None
    improved: int | None = None
    unchanged: int | None = None
    degraded: int | None = None
    baseline_mean: float | None = None
    candidate_mean: float | None = None
    attainable: Interval | None = None
    exact: bool = False
    bounds: Interval | None = None  # the metric's per-query (min, max), where the interval used it
    # a relative effect's per-query (candidate, baseline) values, so the verdict can decide on the linear contrast
    # at the claim's threshold (`relative_contrast`); not part of the record
    pairs: tuple[tuple[float, ...], tuple[float, ...]] | None = field(default=None, repr=False, compare=False)

    @property
    def p_value(self) -> float | None:
        return self.p_values.get(self.primary_test) if self.primary_test else None

    def as_context(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("pairs")
        d["ci"] = list(self.ci)
        d["p_value"] = self.p_value
        for k in ("attainable", "bounds"):
            if d[k] is not None:
                d[k] = list(d[k])
        return d


def paired_t_pvalue(d: np.ndarray) -> float:
    """Two-sided one-sample t-test of mean(d) = 0; all-zero d → 1.0, zero spread with nonzero mean → 0.0."""
    if len(d) < 2:
        return float("nan") if len(d) == 0 or d[0] != 0 else 1.0
    if np.ptp(d) == 0:  # no spread: std() would not be exactly 0 for e.g. three copies of 0.2
        return 1.0 if d[0] == 0 else 0.0
    t = float(d.mean()) / (float(d.std(ddof=1)) / math.sqrt(len(d)))
    return float(2 * _st.t.sf(abs(t), len(d) - 1))


def mcnemar_midp(candidate_correct: Bools, baseline_correct: Bools) -> float:
    """McNemar's mid-p test (Fagerland, Lydersen & Laake 2013): 2·P(X ≤ m) − P(X = m) for X ~ Bin(b + c, 1/2),
    m = min(b, c), i.e. the exact conditional p-value less the probability of the observed table; 1.0 without
    discordant pairs. It holds its level where the exact test is conservative."""
    a = np.asarray(candidate_correct, dtype=bool)
    b = np.asarray(baseline_correct, dtype=bool)
    n01, n10 = int(np.sum(~a & b)), int(np.sum(a & ~b))
    nd = n01 + n10
    if nd == 0:
        return 1.0
    m = min(n01, n10)
    return float(min(1.0, 2 * _st.binom.cdf(m, nd, 0.5) - _st.binom.pmf(m, nd, 0.5)))


def _permutation_p(d: np.ndarray, n_resamples: int, seed: int) -> float:
    from harness.stats._paired import permutation_test

    return permutation_test(d, np.zeros_like(d), n_resamples=n_resamples, seed=seed)


def _wilcoxon_p(d: np.ndarray) -> float:
    nz = d[np.abs(d) > _TIE]
    if len(nz) == 0:
        return 1.0
    return float(_st.wilcoxon(nz, zero_method="wilcox", alternative="two-sided").pvalue)


def paired_effect(candidate: Floats, baseline: Floats, *, relative: bool = False,
                  bounds: tuple[float, float] | None = (0.0, 1.0), confidence: float = 0.95,
                  interval: str | None = None, binary: bool = False, n_resamples: int = 10_000,
                  seed: int = 0, tests: bool = True) -> Effect:
    """The paired effect of candidate over baseline: mean difference, or mean(c)/mean(b) - 1 when `relative`.

    `bounds` are the metric's (min, max) per query (recall, nDCG, accuracy: 0..1; None: unbounded).
    `binary` marks 0/1 outcomes (accuracy) and adds McNemar's mid-p test as the primary test.
    Every pair tied (a bounded metric, not `binary`'s Agresti-Min): the ties interval (`ties_interval`; for a
    relative effect divided by the baseline mean), cut to what the metric can reach over the baseline, and the SD
    that interval implies (`interval_sd`), so the MDE and queries needed are not 0.
    A relative effect's "t" interval is Fieller's (1954) for the ratio of the means, "betting" the ratios whose
    linear contrast c − ρ·b has a betting interval holding 0, "delta" the delta method's est ± t·sd(ψ)/√n; the
    verdict decides on the linear contrast at the claim's threshold (`relative_contrast`), which the effect keeps
    its pairs for. Inside `anytime_intervals()` a bounded metric's default interval is "betting".
    `tests=False` leaves the p-values out (`p_values` empty): for a caller that decides on the interval alone, such as
    a calibration deciding thousands of simulated claims by their intervals.
    """
    a = np.asarray(candidate, dtype=np.float64)
    b = np.asarray(baseline, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"paired scores must be 1-D and the same length, got {a.shape} and {b.shape}")
    kind = "relative" if relative else "difference"
    if interval is None and bounds is not None and anytime_active():
        interval = "betting"
    # paired 0/1 outcomes: Agresti-Min, which a set of ties (no discordant question) cannot collapse to (0, 0)
    method = interval or ("agresti-min" if binary and not relative else VERDICT_INTERVAL[kind])
    if method == "betting" and bounds is None:
        raise ValueError("the betting interval needs the metric's bounds (bounds=None: use t)")
    n = len(a)
    d = a - b
    if method not in ("agresti-min", "betting") and n and bounds and not np.any(d):
        method = "ties"  # every pair tied: a sample interval would collapse to (0, 0)
    counts = dict(improved=int(np.sum(d > _TIE)), unchanged=int(np.sum(np.abs(d) <= _TIE)),
                  degraded=int(np.sum(d < -_TIE)))
    p_values: dict[str, float] = {}
    if n and tests:
        p_values = {"t": paired_t_pvalue(d), "permutation": _permutation_p(d, n_resamples, seed),
                    "wilcoxon": _wilcoxon_p(d)}
        if binary:
            p_values["mcnemar"] = mcnemar_midp(a.astype(bool), b.astype(bool))
    primary = PRIMARY_TEST["binary" if binary else kind]
    mb = float(b.mean()) if n else float("nan")
    ma = float(a.mean()) if n else float("nan")
    common: dict[str, Any] = dict(confidence=confidence, interval_method=method, p_values=p_values, primary_test=primary,
                  baseline_mean=mb, candidate_mean=ma, bounds=tuple(bounds) if bounds else None, **counts)
    if not relative:
        est = float(d.mean()) if n else float("nan")
        if method == "agresti-min":  # its sd, so that queries needed and the MDE agree with the interval
            sd, ci = agresti_min_sd(a, b), agresti_min_interval(a, b, confidence=confidence)
        elif method == "ties":
            assert bounds is not None  # "ties" is chosen only for a bounded metric
            sd, ci = _ties(n, bounds[1] - bounds[0], (bounds[0] - mb, bounds[1] - mb), confidence)
        elif method == "betting":
            assert bounds is not None  # "betting" without bounds raised above
            w = float(bounds[1] - bounds[0])
            sd = float(d.std(ddof=1)) if n > 1 else float("nan")
            ci = betting_interval(d, -w, w, confidence=confidence) if n else (float("nan"), float("nan"))
        else:
            sd = float(d.std(ddof=1)) if n > 1 else float("nan")
            ci = _interval(d, method, confidence, n_resamples, seed)
            if bounds:  # a mean difference of bounded scores lies within ±(max - min): no interval runs past it
                w = float(bounds[1] - bounds[0])
                ci = (max(float(ci[0]), -w), min(float(ci[1]), w))
        att = (bounds[0] - mb, bounds[1] - mb) if bounds and n else None
        return Effect(kind, est, ci, n, sd, attainable=att, **common)
    if n == 0 or mb == 0.0:
        est = float("nan") if n == 0 or ma == 0.0 else float("inf")
        return Effect(kind, est, (float("nan"), float("nan")), n, float("nan"), **common)
    est = ma / mb - 1.0
    psi = (a - (1.0 + est) * b) / mb  # delta-method linearisation of mean(a)/mean(b)
    sd = float(psi.std(ddof=1)) if n > 1 else float("nan")
    att = (bounds[0] / mb - 1.0, bounds[1] / mb - 1.0) if bounds else None
    pairs = (tuple(a.tolist()), tuple(b.tolist()))
    if method == "ties":  # mean(a) = mean(b): the mean difference's ties interval over the baseline mean
        assert bounds is not None and att is not None  # "ties" is chosen only for a bounded metric
        sd, ci = _ties(n, (bounds[1] - bounds[0]) / mb, att, confidence)
    elif method == "t":
        lo, hi = fieller_interval(a, b, confidence=confidence)
        ci = (float(lo) - 1.0, float(hi) - 1.0)
    elif method == "betting":
        ci = _betting_ratio(a, b, bounds, confidence)
    else:
        ci = _relative_interval(a, b, est, psi, method, confidence, n_resamples, seed)
    return Effect(kind, est, ci, n, sd, attainable=att, pairs=pairs, **common)


def relative_contrast(effect: Effect, threshold: float) -> Effect:
    """The relative effect as its linear contrast at the claim's threshold θ0 (Fieller 1954): L_i = c_i − (1 + θ0)·b_i,
    whose mean is ≥ 0 exactly when mean(c)/mean(b) − 1 ≥ θ0 (baseline mean > 0). Its interval (the effect's method,
    at its confidence) is put on the ratio's scale, θ0 + [lo, hi]/mean(b), so that it lies wholly above (below) θ0
    exactly when the contrast's interval lies above (below) 0; sd is sd(L)/mean(b). An effect without pairs, or whose
    interval is not t or betting, is returned unchanged."""
    if effect.kind != "relative" or effect.pairs is None or effect.interval_method not in ("t", "betting"):
        return effect
    a, b = (np.asarray(x, dtype=np.float64) for x in effect.pairs)
    mb = float(b.mean())
    if not len(a) or not mb > 0:
        return effect
    lin = a - (1.0 + threshold) * b
    if effect.interval_method == "t":
        lo, hi = t_interval(lin, confidence=effect.confidence)
    else:
        lo, hi = betting_interval(lin, *_contrast_range(effect.bounds, threshold), confidence=effect.confidence)
    sd = float(lin.std(ddof=1)) / mb if len(lin) > 1 else float("nan")
    return replace(effect, ci=(float(threshold + lo / mb), float(threshold + hi / mb)), sd=sd, interval_method=
                   f"{effect.interval_method} on the linear contrast c - (1 + {threshold:g})·b")


def _contrast_range(bounds: Interval | None, threshold: float) -> Interval:
    """The range of c − (1 + θ)·b for c, b in `bounds` (θ > −1)."""
    if bounds is None:
        raise ValueError("the betting interval needs the metric's bounds")
    lo, hi = float(bounds[0]), float(bounds[1])
    r = 1.0 + threshold
    return (lo - r * hi, hi - r * lo)


def _betting_ratio(a: np.ndarray, b: np.ndarray, bounds: Interval | None, confidence: float,
                   points: int = 65, rounds: int = 5) -> Interval:
    """The ratios − 1 whose linear contrast's betting interval holds 0 (a test-inverted, Fieller-type interval): the
    accepted ratios among the estimate and a grid of 257 points over [0, 4·(upper bound)/mean(b)], each end refined
    on `rounds` finer grids of `points` between its last rejected and first accepted point; an end at the grid's edge
    is unbounded. A ratio is accepted when the contrast's confidence sequence holds 0 (`betting_covers`: one capital
    per side, all the grid's ratios at once), not by bisecting for its bounds."""
    if bounds is None:
        raise ValueError("the betting interval needs the metric's bounds")
    top = 4.0 * float(bounds[1]) / float(b.mean())
    lo_v, hi_v = float(bounds[0]), float(bounds[1])

    def accepts(rho: np.ndarray) -> np.ndarray:
        r = np.asarray(rho, dtype=np.float64)
        rr = 1.0 + (r - 1.0)  # the range of c − r·b for c, b in bounds, as `_contrast_range` at θ = r − 1 gives it
        return betting_covers(a[None, :] - r[:, None] * b[None, :], lo_v - rr * hi_v, hi_v - rr * lo_v, 0.0,
                              confidence=confidence)

    rho = np.union1d(np.linspace(0.0, top, 4 * (points - 1) + 1), [float(a.mean()) / float(b.mean())])
    lo, hi = inverted_interval(accepts, rho, below=0.0, above=float("inf"), points=points, rounds=rounds)
    return (lo - 1.0, hi - 1.0)


def _ties(n: int, scale: float, reach: Interval, confidence: float) -> tuple[float, Interval]:
    """The SD and interval of an effect whose `n` pairs all tied: ±`ties_share`·scale (scale: the metric's range,
    over the baseline mean for a relative effect), cut to `reach`, the effect the metric's bounds allow; the SD is
    the one the uncut half-width implies (`interval_sd`)."""
    lo, hi = ties_interval(n, scale, confidence=confidence)
    return interval_sd(hi, n, confidence=confidence), (max(lo, float(reach[0])), min(hi, float(reach[1])))


def _interval(x: np.ndarray, method: str, confidence: float, n_resamples: int, seed: int) -> Interval:
    if len(x) == 0:
        return (float("nan"), float("nan"))
    if method == "t":
        return t_interval(x, confidence=confidence)
    if method == "percentile":
        return percentile_interval(x, confidence=confidence, n_resamples=n_resamples, seed=seed)
    if method == "bca":
        return bca_interval(x, confidence=confidence, n_resamples=n_resamples, seed=seed)
    raise ValueError(f"unknown interval method {method!r}; expected t, percentile or bca")


def _relative_interval(a: np.ndarray, b: np.ndarray, est: float, psi: np.ndarray, method: str, confidence: float,
                       n_resamples: int, seed: int) -> Interval:
    n = len(a)
    if method == "delta":  # delta method: est ± t·sd(psi)/√n, psi centred at 0
        lo, hi = t_interval(psi, confidence=confidence)
        return (est + lo, est + hi)
    rng = np.random.default_rng(seed)
    w = rng.multinomial(n, np.full(n, 1.0 / n), size=n_resamples)
    ma, mb = (w @ a) / n, (w @ b) / n
    with np.errstate(divide="ignore", invalid="ignore"):
        reps = np.where(mb > 0, ma / mb - 1.0, np.nan)
    reps = reps[np.isfinite(reps)]
    if len(reps) == 0:
        return (float("nan"), float("nan"))
    if method == "percentile":
        q = (1 - confidence) / 2
        return (float(np.quantile(reps, q)), float(np.quantile(reps, 1 - q)))
    if method == "bca":
        if n < 2:
            return (float("-inf"), float("inf"))
        sa, sb = a.sum(), b.sum()
        with np.errstate(divide="ignore", invalid="ignore"):
            jack = ((sa - a) / (n - 1)) / ((sb - b) / (n - 1)) - 1.0
        jack = np.where(np.isfinite(jack), jack, est)
        return bca_from_replicates(est, reps, jack, confidence=confidence)
    raise ValueError(f"unknown interval method {method!r}; expected t, betting, delta, percentile or bca")


def proportion_effect(outcomes: Bools, *, confidence: float = 0.95, interval: str | None = None) -> Effect:
    """A one-sample rate (share of True outcomes) with its Wilson interval (inside `anytime_intervals()`: the
    betting confidence sequence of 0/1 values); attainable range 0..1."""
    x = np.asarray(outcomes, dtype=bool)
    n = len(x)
    k = int(x.sum())
    p = k / n if n else float("nan")
    sd = math.sqrt(p * (1 - p)) if n else float("nan")
    method = interval or ("betting" if anytime_active() else VERDICT_INTERVAL["proportion"])
    if method == "wilson":
        ci = wilson_interval(k, n, confidence=confidence)
    elif method == "betting":
        ci = betting_interval(x.astype(np.float64), 0.0, 1.0, confidence=confidence) if n else (float("nan"),) * 2
    else:
        raise ValueError(f"unknown interval method {method!r} for a rate; expected wilson or betting")
    return Effect("proportion", p, ci, n, sd, confidence=confidence, interval_method=method, attainable=(0.0, 1.0),
                  bounds=(0.0, 1.0))
