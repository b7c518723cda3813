"""Confidence intervals of a mean (or of a paired effect's linearised per-query values).

Three methods, chosen for verdicts by the calibration on real topics (`harness.stats.calibration`,
`benchmarks/test_calibration.py`; Urbano, Lima & Hanjalic, SIGIR 2019):

- `t_interval`: Student-t, mean ± t_{1-α/2, n-1}·sd/√n;
- `percentile_interval`: percentile bootstrap of the mean (Efron & Tibshirani 1993, §13.3);
- `bca_interval`: bias-corrected and accelerated bootstrap (Efron 1987; Efron & Tibshirani 1993, §14.3),
  acceleration from the jackknife;
- `wilson_interval`: the Wilson score interval of a binomial proportion (Wilson 1927), for one-sample rates;
- `agresti_min_interval`: the difference of two paired proportions (accuracy of two systems on the same
  questions), Agresti & Min (2005): Wald on the table with 1/2 added to each cell;
- `fieller_interval`: the ratio of two paired means, Fieller (1954): the ratios ρ whose linear contrast
  mean(c − ρ·b) a Student-t interval does not separate from 0;
- `clopper_pearson_lower`: the exact one-sided lower confidence bound of a binomial proportion.

All return (low, high); degenerate inputs give an honest answer: n = 0 → (nan, nan), n = 1 → (-inf, inf)
for the t interval (no spread can be estimated), all-equal values → (mean, mean).
"""
from __future__ import annotations

from typing import Sequence, Union

import numpy as np
import numpy.typing as npt
from harness.stats._scipy import stats as _st

Interval = tuple[float, float]
# per-query values as callers hold them: a list, or the float (bool) array a computation produced
Floats = Union[Sequence[float], npt.NDArray[np.float64]]
Bools = Union[Sequence[bool], npt.NDArray[np.bool_]]


def _values(x: Floats) -> np.ndarray:
    a = np.asarray(x, dtype=np.float64)
    if a.ndim != 1:
        raise ValueError(f"expected a 1-D array of values, got shape {a.shape}")
    return a


def t_interval(values: Floats, *, confidence: float = 0.95) -> Interval:
    """Student-t interval of the mean."""
    x = _values(values)
    n = len(x)
    if n == 0:
        return (float("nan"), float("nan"))
    if n == 1:
        return (float("-inf"), float("inf"))
    if np.ptp(x) == 0:  # no spread (mean() would round 0.2 * 3 / 3 to 0.19999999999999996)
        return (float(x[0]), float(x[0]))
    m = float(x.mean())
    sd = float(x.std(ddof=1))
    half = float(_st.t.ppf(0.5 + confidence / 2, n - 1)) * sd / np.sqrt(n)
    return (m - half, m + half)


def bootstrap_means(values: Floats, *, n_resamples: int = 10_000, seed: int = 0) -> np.ndarray:
    """Means of `n_resamples` bootstrap resamples (multinomial weights; memory O(n_resamples · n))."""
    x = _values(values)
    rng = np.random.default_rng(seed)
    w = rng.multinomial(len(x), np.full(len(x), 1.0 / len(x)), size=n_resamples)
    means: np.ndarray = (w @ x) / len(x)
    return means


def percentile_interval(values: Floats, *, confidence: float = 0.95, n_resamples: int = 10_000,
                        seed: int = 0) -> Interval:
    """Percentile bootstrap interval of the mean."""
    x = _values(values)
    if len(x) == 0:
        return (float("nan"), float("nan"))
    means = bootstrap_means(x, n_resamples=n_resamples, seed=seed)
    a = (1 - confidence) / 2
    return (float(np.quantile(means, a)), float(np.quantile(means, 1 - a)))


def bca_from_replicates(theta_hat: float, replicates: np.ndarray, jackknife: np.ndarray, *,
                        confidence: float = 0.95) -> Interval:
    """BCa interval from a statistic's bootstrap replicates and its leave-one-out (jackknife) values."""
    reps = np.asarray(replicates, dtype=np.float64)
    reps = reps[np.isfinite(reps)]
    if len(reps) == 0 or not np.isfinite(theta_hat):
        return (float("nan"), float("nan"))
    if np.all(reps == reps[0]):
        return (float(reps[0]), float(reps[0]))
    prop = (np.sum(reps < theta_hat) + 0.5 * np.sum(reps == theta_hat)) / len(reps)
    prop = min(max(prop, 1.0 / (len(reps) + 1)), 1 - 1.0 / (len(reps) + 1))
    z0 = _st.norm.ppf(prop)
    jk = np.asarray(jackknife, dtype=np.float64)
    dev = jk.mean() - jk
    denom = 6.0 * (np.sum(dev**2) ** 1.5)
    acc = float(np.sum(dev**3) / denom) if denom > 0 else 0.0
    out = []
    for q in ((1 - confidence) / 2, (1 + confidence) / 2):
        zq = _st.norm.ppf(q)
        adj = _st.norm.cdf(z0 + (z0 + zq) / (1 - acc * (z0 + zq)))
        out.append(float(np.quantile(reps, adj)))
    return (out[0], out[1])


def bca_interval(values: Floats, *, confidence: float = 0.95, n_resamples: int = 10_000,
                 seed: int = 0) -> Interval:
    """BCa bootstrap interval of the mean."""
    x = _values(values)
    n = len(x)
    if n == 0:
        return (float("nan"), float("nan"))
    if n == 1:
        return (float("-inf"), float("inf"))
    means = bootstrap_means(x, n_resamples=n_resamples, seed=seed)
    jack = (x.sum() - x) / (n - 1)
    return bca_from_replicates(float(x.mean()), means, jack, confidence=confidence)


def wilson_interval(successes: int, n: int, *, confidence: float = 0.95) -> Interval:
    """Wilson score interval of a proportion successes / n."""
    if n <= 0:
        return (float("nan"), float("nan"))
    z = float(_st.norm.ppf(0.5 + confidence / 2))
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    # no successes (all successes): centre = half exactly, so the bound is 0 (1), not rounding's 7e-18
    lo = 0.0 if successes == 0 else max(0.0, centre - half)
    hi = 1.0 if successes == n else min(1.0, centre + half)
    return (float(lo), float(hi))


def agresti_min_interval(candidate: Floats, baseline: Floats, *,
                         confidence: float = 0.95) -> Interval:
    """Interval of mean(candidate) - mean(baseline) for paired 0/1 outcomes (Agresti & Min, Stat Med 2005,
    24:729-740): add 1/2 to each cell of the 2x2 table, then Wald. With n questions, `i` improved (candidate
    right, baseline wrong) and `d` degraded: p_i = (i + 1/2)/(n + 2), p_d = (d + 1/2)/(n + 2), centre p_i - p_d,
    half-width z·sqrt((p_i + p_d - (p_i - p_d)^2)/(n + 2)). Unlike a t or bootstrap interval it does not
    collapse to (0, 0) when no question is discordant: a few ties cannot decide a claim."""
    centre, sd, n = _agresti_min(candidate, baseline)
    if n == 0:
        return (float("nan"), float("nan"))
    half = float(_st.norm.ppf(0.5 + confidence / 2)) * sd / np.sqrt(n + 2)
    return (float(max(-1.0, centre - half)), float(min(1.0, centre + half)))


def agresti_min_sd(candidate: Floats, baseline: Floats) -> float:
    """The per-question standard deviation behind `agresti_min_interval`: sqrt(p_i + p_d - (p_i - p_d)^2)
    (what sample sizes and detectable effects for a paired accuracy difference are computed from)."""
    return _agresti_min(candidate, baseline)[1]


def _agresti_min(candidate: Floats, baseline: Floats) -> tuple[float, float, int]:
    a, b = _values(candidate), _values(baseline)
    if a.shape != b.shape:
        raise ValueError(f"paired outcomes must have the same length, got {a.shape} and {b.shape}")
    n = len(a)
    if n == 0:
        return float("nan"), float("nan"), 0
    improved, degraded = float(np.sum((a > 0.5) & (b <= 0.5))), float(np.sum((a <= 0.5) & (b > 0.5)))
    pi, pd = (improved + 0.5) / (n + 2), (degraded + 0.5) / (n + 2)
    return pi - pd, float(np.sqrt(pi + pd - (pi - pd) ** 2)), n


def fieller_interval(candidate: Floats, baseline: Floats, *,
                     confidence: float = 0.95) -> Interval:
    """Fieller's (1954) interval of mean(candidate)/mean(baseline) for paired values: the ρ with
    (m_c − ρ·m_b)² ≤ q²·(v_cc − 2ρ·v_cb + ρ²·v_bb), q = t_{(1+c)/2, n−1}, v the sample (co)variances over n; the
    quadratic's roots when m_b² > q²·v_bb (the baseline mean is distinguishable from 0), else (−inf, inf)."""
    a, b = _values(candidate), _values(baseline)
    if a.shape != b.shape:
        raise ValueError(f"paired values must have the same length, got {a.shape} and {b.shape}")
    n = len(a)
    if n == 0:
        return (float("nan"), float("nan"))
    if n == 1:
        return (float("-inf"), float("inf"))
    q2 = float(_st.t.ppf(0.5 + confidence / 2, n - 1)) ** 2
    ma, mb = float(a.mean()), float(b.mean())
    cov = np.cov(np.vstack([a, b]), ddof=1) / n
    qa, qb, qc = mb * mb - q2 * cov[1, 1], ma * mb - q2 * cov[0, 1], ma * ma - q2 * cov[0, 0]
    if qa <= 0:
        return (float("-inf"), float("inf"))
    root = float(np.sqrt(max(qb * qb - qa * qc, 0.0)))
    return ((qb - root) / qa, (qb + root) / qa)


def clopper_pearson_lower(successes: int, n: int, *, confidence: float = 0.95) -> float:
    """The exact (Clopper & Pearson 1934) one-sided lower bound of a proportion: the p with P(X ≥ k | n, p) = 1 − c,
    i.e. the (1 − c) quantile of Beta(k, n − k + 1); 0 for k = 0."""
    if n <= 0:
        return float("nan")
    if successes <= 0:
        return 0.0
    return float(_st.beta.ppf(1 - confidence, successes, n - successes + 1))


METHODS = {"t": t_interval, "percentile": percentile_interval, "bca": bca_interval}


def ties_share(n: int, *, confidence: float = 0.95) -> float:
    """The largest share of queries on which two arms could differ when all `n` pairs were seen tied:
    p = 1 - ((1 - c) / 2) ** (1 / n), the Clopper-Pearson upper bound for 0 of n (30 ties: 0.116; 12: 0.265)."""
    return float(1.0 - ((1.0 - confidence) / 2.0) ** (1.0 / n))


def ties_interval(n: int, metric_range: float, *, confidence: float = 0.95) -> Interval:
    """The mean difference's interval when all `n` pairs are tied: the share of queries on which the arms
    could differ is at most p = `ties_share(n)`, and a query's difference at most the metric's range, so the
    mean lies within ±p·range. 30 ties of a 0..1 metric: ±0.116."""
    p = ties_share(n, confidence=confidence)
    return (-p * metric_range, p * metric_range)


def interval_sd(half_width: float, n: int, *, confidence: float = 0.95) -> float:
    """The per-query SD a Student-t interval of `half_width` at n implies: half·√n / t_{(1+c)/2, n-1} (nan below
    n = 2), so that queries needed and the MDE extrapolate from an interval that is not built on a sample SD."""
    if n < 2 or not np.isfinite(half_width):
        return float("nan")
    return float(half_width * np.sqrt(n) / _st.t.ppf(0.5 + confidence / 2, n - 1))
