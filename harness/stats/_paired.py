"""Paired comparisons of per-query scores: bootstrap CIs, randomisation and Wilcoxon tests, McNemar,
Holm correction, effect size and the minimum detectable effect for a sample size."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
from harness.stats._scipy import stats as _st

from harness.stats.intervals import Bools, Floats


@dataclass(frozen=True)
class PairedDifference:
    """Mean of (candidate - baseline) with a bootstrap percentile CI."""

    mean: float
    ci: tuple[float, float]
    n: int
    confidence: float


def _pair(candidate: Floats, baseline: Floats) -> tuple[np.ndarray, np.ndarray]:
    a, b = np.asarray(candidate, dtype=np.float64), np.asarray(baseline, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"paired scores must be 1-D and the same length, got {a.shape} and {b.shape}")
    return a, b


def bootstrap_ci(values: Floats, *, confidence: float = 0.95, n_resamples: int = 10_000,
                 seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap CI of the mean."""
    x = np.asarray(values, dtype=np.float64)
    if len(x) == 0:
        return (float("nan"), float("nan"))
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(x), size=(n_resamples, len(x)))
    means = x[idx].mean(axis=1)
    alpha = (1 - confidence) / 2
    return float(np.quantile(means, alpha)), float(np.quantile(means, 1 - alpha))


def paired_difference(candidate: Floats, baseline: Floats, *, confidence: float = 0.95,
                      n_resamples: int = 10_000, seed: int = 0) -> PairedDifference:
    a, b = _pair(candidate, baseline)
    d = a - b
    return PairedDifference(float(d.mean()) if len(d) else float("nan"),
                            bootstrap_ci(d, confidence=confidence, n_resamples=n_resamples, seed=seed),
                            len(d), confidence)


def relative_improvement(candidate: Floats, baseline: Floats) -> float:
    """mean(candidate) / mean(baseline) - 1 (inf when the baseline mean is 0 and the candidate's is not)."""
    a, b = _pair(candidate, baseline)
    mb, ma = float(b.mean()), float(a.mean())
    if mb == 0.0:
        return 0.0 if ma == 0.0 else float("inf")
    return ma / mb - 1.0


def relative_improvement_ci(candidate: Floats, baseline: Floats, *, confidence: float = 0.95,
                            n_resamples: int = 10_000, seed: int = 0) -> tuple[float, float]:
    """Paired bootstrap CI of the relative improvement of the means (queries resampled together)."""
    a, b = _pair(candidate, baseline)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(a), size=(n_resamples, len(a)))
    ma, mb = a[idx].mean(axis=1), b[idx].mean(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(mb > 0, ma / mb - 1.0, np.nan)
    rel = rel[~np.isnan(rel)]
    if len(rel) == 0:
        return (float("nan"), float("nan"))
    alpha = (1 - confidence) / 2
    return float(np.quantile(rel, alpha)), float(np.quantile(rel, 1 - alpha))


def permutation_test(candidate: Floats, baseline: Floats, *, n_resamples: int = 10_000,
                     seed: int = 0) -> float:
    """Two-sided paired randomisation test of mean difference (random sign flips); p-value."""
    a, b = _pair(candidate, baseline)
    d = a - b
    if len(d) == 0 or np.all(d == 0):
        return 1.0
    rng = np.random.default_rng(seed)
    signs = rng.choice([-1.0, 1.0], size=(n_resamples, len(d)))
    null = np.abs((signs * d).mean(axis=1))
    observed = abs(d.mean())
    return float((1 + np.sum(null >= observed - 1e-12)) / (n_resamples + 1))


def wilcoxon(candidate: Floats, baseline: Floats) -> float:
    """Two-sided Wilcoxon signed-rank p-value (zero differences dropped, as scipy's default)."""
    a, b = _pair(candidate, baseline)
    if np.all(a == b):
        return 1.0
    return float(_st.wilcoxon(a, b, zero_method="wilcox", alternative="two-sided").pvalue)


@dataclass(frozen=True)
class McNemarResult:
    statistic: float
    p_value: float
    b: int  # baseline right, candidate wrong
    c: int  # baseline wrong, candidate right
    exact: bool


def mcnemar(candidate_correct: Bools, baseline_correct: Bools, *,
            exact_below: int = 25) -> McNemarResult:
    """McNemar's test on paired binary outcomes via statsmodels; exact binomial when the
    discordant count is below `exact_below`, else chi-square with continuity correction."""
    from statsmodels.stats.contingency_tables import mcnemar as _mcnemar

    a = np.asarray(candidate_correct, dtype=bool)
    b = np.asarray(baseline_correct, dtype=bool)
    if a.shape != b.shape:
        raise ValueError("paired outcomes must have the same length")
    base_only = int(np.sum(~a & b))  # baseline right, candidate wrong
    cand_only = int(np.sum(a & ~b))  # baseline wrong, candidate right
    table = np.array([[np.sum(a & b), base_only], [cand_only, np.sum(~a & ~b)]])
    exact = (base_only + cand_only) < exact_below
    res = _mcnemar(table, exact=exact, correction=True)
    return McNemarResult(float(res.statistic), float(res.pvalue), base_only, cand_only, exact)


def holm(p_values: Sequence[float], alpha: float = 0.05) -> tuple[list[bool], list[float]]:
    """Holm-Bonferroni step-down correction via statsmodels: (reject flags, adjusted p-values)."""
    if len(p_values) == 0:  # before the import: statsmodels is a second of every run that has no p-value
        return [], []
    from statsmodels.stats.multitest import multipletests

    reject, adjusted, _, _ = multipletests(list(p_values), alpha=alpha, method="holm")
    return [bool(r) for r in reject], [float(p) for p in adjusted]


def cohens_dz(candidate: Floats, baseline: Floats) -> float:
    """Paired effect size: mean difference over the standard deviation of the differences (ddof=1)."""
    a, b = _pair(candidate, baseline)
    d = a - b
    sd = float(d.std(ddof=1)) if len(d) > 1 else 0.0
    if sd == 0.0:
        return 0.0 if float(d.mean()) == 0.0 else float("inf") * np.sign(d.mean())
    return float(d.mean() / sd)


def kendall_tau(x: Floats, y: Floats) -> float:
    """Kendall's tau-b (scipy); nan when undefined (a constant input), never a made-up 0.0."""
    if len(set(x)) < 2 or len(set(y)) < 2:
        return float("nan")
    return float(_st.kendalltau(x, y).statistic)
