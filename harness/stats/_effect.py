"""A measured effect and everything a verdict needs: estimate, interval, n, spread, p-values,
queries improved / unchanged / degraded and the range the metric can still reach.

`paired_effect` compares two systems' per-query scores (same queries, same order) as a mean difference
or as a relative improvement of the means; `proportion_effect` is a one-sample rate (e.g. abstention).
The interval method for each kind is the one the calibration on real topics chose (`VERDICT_INTERVAL`).
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from scipy import stats as _st

from harness.stats.intervals import (
    Bools, Floats, Interval, agresti_min_interval, agresti_min_sd, bca_from_replicates, bca_interval, interval_sd, percentile_interval,
    t_interval, ties_interval, wilson_interval,
)

# Chosen by benchmarks/test_calibration.py on Cranfield (dense, BM25, hybrid; 225 topics): see docs/verdicts.md#which-interval-which-test.
VERDICT_INTERVAL = {"difference": "t", "relative": "t", "proportion": "wilson"}
PRIMARY_TEST = {"difference": "t", "relative": "t", "binary": "mcnemar"}
_TIE = 1e-12


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

    @property
    def p_value(self) -> float | None:
        return self.p_values.get(self.primary_test) if self.primary_test else None

    def as_context(self) -> dict[str, Any]:
        d = asdict(self)
        d["ci"] = list(self.ci)
        d["p_value"] = self.p_value
        if self.attainable is not None:
            d["attainable"] = list(self.attainable)
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
                  seed: int = 0) -> Effect:
    """The paired effect of candidate over baseline: mean difference, or mean(c)/mean(b) - 1 when `relative`.

    `bounds` are the metric's (min, max) per query (recall, nDCG, accuracy: 0..1; None: unbounded).
    `binary` marks 0/1 outcomes (accuracy) and adds McNemar's mid-p test as the primary test.
    Every pair tied (a bounded metric, not `binary`'s Agresti-Min): the ties interval (`ties_interval`; for a
    relative effect divided by the baseline mean), cut to what the metric can reach over the baseline, and the SD
    that interval implies (`interval_sd`), so the MDE and queries needed are not 0.
    """
    a = np.asarray(candidate, dtype=np.float64)
    b = np.asarray(baseline, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"paired scores must be 1-D and the same length, got {a.shape} and {b.shape}")
    kind = "relative" if relative else "difference"
    # paired 0/1 outcomes: Agresti-Min, which a set of ties (no discordant question) cannot collapse to (0, 0)
    method = interval or ("agresti-min" if binary and not relative else VERDICT_INTERVAL[kind])
    n = len(a)
    d = a - b
    if method != "agresti-min" and n and bounds and not np.any(d):
        method = "ties"  # every pair tied: a sample interval would collapse to (0, 0)
    counts = dict(improved=int(np.sum(d > _TIE)), unchanged=int(np.sum(np.abs(d) <= _TIE)),
                  degraded=int(np.sum(d < -_TIE)))
    p_values: dict[str, float] = {}
    if n:
        p_values = {"t": paired_t_pvalue(d), "permutation": _permutation_p(d, n_resamples, seed),
                    "wilcoxon": _wilcoxon_p(d)}
        if binary:
            p_values["mcnemar"] = mcnemar_midp(a.astype(bool), b.astype(bool))
    primary = PRIMARY_TEST["binary" if binary else kind]
    mb = float(b.mean()) if n else float("nan")
    ma = float(a.mean()) if n else float("nan")
    common: dict[str, Any] = dict(confidence=confidence, interval_method=method, p_values=p_values, primary_test=primary,
                  baseline_mean=mb, candidate_mean=ma, **counts)
    if not relative:
        est = float(d.mean()) if n else float("nan")
        if method == "agresti-min":  # its sd, so that queries needed and the MDE agree with the interval
            sd, ci = agresti_min_sd(a, b), agresti_min_interval(a, b, confidence=confidence)
        elif method == "ties":
            assert bounds is not None  # "ties" is chosen only for a bounded metric
            sd, ci = _ties(n, bounds[1] - bounds[0], (bounds[0] - mb, bounds[1] - mb), confidence)
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
    if method == "ties":  # mean(a) = mean(b): the mean difference's ties interval over the baseline mean
        assert bounds is not None and att is not None  # "ties" is chosen only for a bounded metric
        sd, ci = _ties(n, (bounds[1] - bounds[0]) / mb, att, confidence)
    else:
        ci = _relative_interval(a, b, est, psi, method, confidence, n_resamples, seed)
    return Effect(kind, est, ci, n, sd, attainable=att, **common)


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
    if method == "t":  # delta method: est ± t·sd(psi)/√n, psi centred at 0
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
    raise ValueError(f"unknown interval method {method!r}; expected t, percentile or bca")


def proportion_effect(outcomes: Bools, *, confidence: float = 0.95) -> Effect:
    """A one-sample rate (share of True outcomes) with its Wilson interval; attainable range 0..1."""
    x = np.asarray(outcomes, dtype=bool)
    n = len(x)
    k = int(x.sum())
    p = k / n if n else float("nan")
    sd = math.sqrt(p * (1 - p)) if n else float("nan")
    return Effect("proportion", p, wilson_interval(k, n, confidence=confidence), n, sd, confidence=confidence,
                  interval_method="wilson", attainable=(0.0, 1.0))
