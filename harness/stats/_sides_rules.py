"""Vectorised copies of the intervals and the verdict a sequential claim is decided by, one row per simulated claim,
for the per-side calibration (`harness.stats.calibration_sides`). `tests/test_calibration_sides_equal.py` proves them
equal to the production path (`paired_effect` / `proportion_effect` → `decide`) row by row.

A rule maps a claim kind (difference, relative, binary, proportion, kappa) to a function
`(A, B, confidence, threshold, bounds) -> (lo, hi, blocked, reach)`: the interval the verdict reads, on the claim's
scale (a relative claim decided on its linear contrast: θ0 + [lo, hi]/mean(b)), the rows the verdict cannot decide
whatever the interval (no estimate, a zero-width interval), and the largest effect the metric can still reach over
the baseline (`Effect.attainable`; a '>=' or '>' claim whose threshold it does not satisfy is untestable).

- `BEFORE`: the code on main before issue 36: Student-t (the ties interval when every pair tied), the delta method
  for a ratio, Agresti-Min, Wilson, at the repeated-interval levels of the RCI design;
- `AFTER`: the betting confidence sequence of every kind (a relative claim, and Cohen's κ, on its linear contrast),
  at 1 − α at every look of the anytime design; for κ, `BEFORE` is the naive rule a κ claim in looks would read
  without it (the delta method's fixed-n interval; κ was never sequential before issue 37);
- `CANDIDATES`: the alternatives the choice was made among, on the RCI design: Student-t on the linear contrast,
  and Johnson's skewness-corrected t made monotone by Hall (1992).
"""
from __future__ import annotations

from typing import Callable

import numpy as np
from harness.stats._scipy import stats as _st

from harness.stats.betting import betting_bounds
from harness.stats.kappa import contrast_range, kappa_range

Bounds = tuple[float, float]
Quad = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]  # (lo, hi, blocked, reach), one entry per row
Rule = Callable[[np.ndarray, np.ndarray | None, float, float, Bounds], Quad]
Interval2 = Callable[[np.ndarray, float, float], tuple[np.ndarray, np.ndarray]]  # (values, lower, upper) -> (lo, hi)


def _t(X: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows' Student-t intervals as `t_interval` gives them (a row without spread: (x0, x0)); also the mean."""
    n = X.shape[1]
    m = X.mean(axis=1)
    flat = np.ptp(X, axis=1) == 0
    half = _st.t.ppf(0.5 + confidence / 2, n - 1) * X.std(axis=1, ddof=1) / np.sqrt(n)
    return np.where(flat, X[:, 0], m - half), np.where(flat, X[:, 0], m + half), m


def _ties(n: int, scale: np.ndarray | float, confidence: float) -> np.ndarray | float:
    return (1.0 - float(((1.0 - confidence) / 2.0) ** (1.0 / n))) * scale


def _hall(X: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """Johnson's (1978) skewness-corrected t, made monotone by Hall (1992): g(T) = T + γ/(6√n) + γT²/(3√n) +
    γ²T³/(27n) is treated as t_{n−1}, γ the sample skewness m3/m2^1.5; the interval inverts g."""
    n = X.shape[1]
    m, s = X.mean(axis=1), X.std(axis=1, ddof=1)
    c = X - m[:, None]
    m2, m3 = (c ** 2).mean(axis=1), (c ** 3).mean(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        g = np.where(m2 > 0, m3 / m2 ** 1.5, 0.0)
    b, a = g / (3 * np.sqrt(n)), g / (6 * np.sqrt(n))
    q = _st.t.ppf(0.5 + confidence / 2, n - 1)

    def inverse(y: float) -> np.ndarray:
        small = np.abs(b) < 1e-12
        with np.errstate(divide="ignore", invalid="ignore"):
            x: np.ndarray = np.where(small, y - a, (np.cbrt(1 + 3 * b * (y - a)) - 1) / np.where(small, 1.0, b))
        return x

    se = s / np.sqrt(n)
    return m - inverse(q) * se, m - inverse(-q) * se


def _reach(mb: np.ndarray, bounds: Bounds, relative: bool) -> np.ndarray:
    """The largest effect the metric can reach over each row's baseline mean (`Effect.attainable`'s upper end)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return bounds[1] / mb - 1.0 if relative else bounds[1] - mb


# ---------------------------------------------------------------- before (main)
def before_difference(A: np.ndarray, B: np.ndarray | None, confidence: float, threshold: float,
                      bounds: Bounds) -> Quad:
    assert B is not None  # a paired kind: only a rate (proportion) has no baseline scores
    D = A - B
    n, w = D.shape[1], bounds[1] - bounds[0]
    mb = B.mean(axis=1)
    lo, hi, _ = _t(D, confidence)
    lo, hi = np.maximum(lo, -w), np.minimum(hi, w)
    tied = ~np.any(D != 0, axis=1)
    p = _ties(n, w, confidence)
    lo = np.where(tied, np.maximum(-p, bounds[0] - mb), lo)
    hi = np.where(tied, np.minimum(p, bounds[1] - mb), hi)
    return lo, hi, lo == hi, _reach(mb, bounds, False)


def before_relative(A: np.ndarray, B: np.ndarray | None, confidence: float, threshold: float,
                    bounds: Bounds) -> Quad:
    assert B is not None  # a paired kind: only a rate (proportion) has no baseline scores
    ma, mb = A.mean(axis=1), B.mean(axis=1)
    ok = mb != 0
    with np.errstate(divide="ignore", invalid="ignore"):
        est = np.where(ok, ma / np.where(ok, mb, 1.0) - 1.0, np.nan)
        psi = (A - (1.0 + est)[:, None] * B) / np.where(ok, mb, 1.0)[:, None]
    lo, hi, _ = _t(psi, confidence)
    lo, hi = est + lo, est + hi
    n = A.shape[1]
    tied = ~np.any(A != B, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = _ties(n, (bounds[1] - bounds[0]) / mb, confidence)
        lo = np.where(tied, np.maximum(-p, bounds[0] / mb - 1.0), lo)
        hi = np.where(tied, np.minimum(p, bounds[1] / mb - 1.0), hi)
    return lo, hi, ~ok | (lo == hi), _reach(mb, bounds, True)


def before_binary(A: np.ndarray, B: np.ndarray | None, confidence: float, threshold: float,
                  bounds: Bounds) -> Quad:
    assert B is not None  # a paired kind: only a rate (proportion) has no baseline scores
    n = A.shape[1]
    improved = np.sum((A > 0.5) & (B <= 0.5), axis=1)
    degraded = np.sum((A <= 0.5) & (B > 0.5), axis=1)
    pi, pd = (improved + 0.5) / (n + 2), (degraded + 0.5) / (n + 2)
    half = _st.norm.ppf(0.5 + confidence / 2) * np.sqrt(pi + pd - (pi - pd) ** 2) / np.sqrt(n + 2)
    lo, hi = np.maximum(-1.0, pi - pd - half), np.minimum(1.0, pi - pd + half)
    return lo, hi, lo == hi, _reach(B.mean(axis=1), bounds, False)


def before_proportion(A: np.ndarray, B: np.ndarray | None, confidence: float, threshold: float,
                      bounds: Bounds) -> Quad:
    n = A.shape[1]
    k = A.sum(axis=1)
    z = _st.norm.ppf(0.5 + confidence / 2)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    lo = np.where(k == 0, 0.0, np.maximum(0.0, centre - half))
    hi = np.where(k == n, 1.0, np.minimum(1.0, centre + half))
    return lo, hi, lo == hi, np.ones_like(lo)


# ---------------------------------------------------------------- after (this issue)
def _contrast(A: np.ndarray, B: np.ndarray, threshold: float, bounds: Bounds, interval: Interval2) -> Quad:
    """A relative claim on its linear contrast L = A − (1 + θ0)·B, its interval put on the ratio's scale."""
    mb = B.mean(axis=1)
    r = 1.0 + threshold
    lo, hi = interval(A - r * B, bounds[0] - r * bounds[1], bounds[1] - r * bounds[0])
    ok = mb > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        lo, hi = threshold + lo / mb, threshold + hi / mb
    return lo, hi, ~ok | (lo == hi), _reach(mb, bounds, True)


def after_difference(A: np.ndarray, B: np.ndarray | None, confidence: float, threshold: float,
                     bounds: Bounds) -> Quad:
    assert B is not None  # a paired kind: only a rate (proportion) has no baseline scores
    w = bounds[1] - bounds[0]
    lo, hi = betting_bounds(A - B, -w, w, confidence=confidence)
    return lo, hi, lo == hi, _reach(B.mean(axis=1), bounds, False)


def after_relative(A: np.ndarray, B: np.ndarray | None, confidence: float, threshold: float,
                   bounds: Bounds) -> Quad:
    assert B is not None  # a paired kind: only a rate (proportion) has no baseline scores
    return _contrast(A, B, threshold, bounds, lambda L, lo, hi: betting_bounds(L, lo, hi, confidence=confidence))


def after_proportion(A: np.ndarray, B: np.ndarray | None, confidence: float, threshold: float,
                     bounds: Bounds) -> Quad:
    lo, hi = betting_bounds(A, 0.0, 1.0, confidence=confidence)
    return lo, hi, lo == hi, np.ones_like(lo)


# ---------------------------------------------------------------- candidates (RCI design)
def t_contrast_relative(A: np.ndarray, B: np.ndarray | None, confidence: float, threshold: float,
                        bounds: Bounds) -> Quad:
    assert B is not None  # a paired kind: only a rate (proportion) has no baseline scores
    return _contrast(A, B, threshold, bounds, lambda L, lo, hi: _t(L, confidence)[:2])


def hall_difference(A: np.ndarray, B: np.ndarray | None, confidence: float, threshold: float,
                    bounds: Bounds) -> Quad:
    assert B is not None  # a paired kind: only a rate (proportion) has no baseline scores
    lo, hi = _hall(A - B, confidence)
    return lo, hi, ~(hi > lo), _reach(B.mean(axis=1), bounds, False)


def hall_relative(A: np.ndarray, B: np.ndarray | None, confidence: float, threshold: float,
                  bounds: Bounds) -> Quad:
    assert B is not None  # a paired kind: only a rate (proportion) has no baseline scores
    return _contrast(A, B, threshold, bounds, lambda L, lo, hi: _hall(L, confidence))


# ---------------------------------------------------------------- Cohen's κ (harness.stats.kappa)
def _kappa(A: np.ndarray, B: np.ndarray, threshold: float, bounds: Bounds, interval: Interval2) -> Quad:
    """A κ claim (A: each item's u, B: its w; κ = mean(u)/mean(w)) on its linear contrast L = u − θ0·w, whose values lie
    in `harness.stats.kappa.contrast_range` (bounds = (−m, 1), m the larger label share), its interval put on κ's
    scale, θ0 + [lo, hi]/mean(w), cut to κ's range (`kappa_range`); κ can reach 1."""
    lo, hi = interval(A - threshold * B, *contrast_range(-bounds[0], threshold))
    mw = B.mean(axis=1)
    bottom, top = kappa_range(-bounds[0])
    lo, hi = np.maximum(threshold + lo / mw, bottom), np.minimum(threshold + hi / mw, top)
    return lo, hi, lo == hi, np.ones_like(lo)


def after_kappa(A: np.ndarray, B: np.ndarray | None, confidence: float, threshold: float, bounds: Bounds) -> Quad:
    assert B is not None  # κ's items have (u, w) pairs
    return _kappa(A, B, threshold, bounds, lambda L, lo, hi: betting_bounds(L, lo, hi, confidence=confidence))


def delta_kappa(A: np.ndarray, B: np.ndarray | None, confidence: float, threshold: float, bounds: Bounds) -> Quad:
    """The naive rule: the delta method's Wald interval around κ̂ = mean(u)/mean(w), ±z·sd(ψ)/√n with
    ψ = (u − κ̂·w)/mean(w), read at `confidence` at every look."""
    assert B is not None  # κ's items have (u, w) pairs
    n = A.shape[1]
    mw = B.mean(axis=1)
    est = A.mean(axis=1) / mw
    psi = (A - est[:, None] * B) / mw[:, None]
    half = _st.norm.ppf(0.5 + confidence / 2) * psi.std(axis=1, ddof=1) / np.sqrt(n)
    lo, hi = est - half, est + half
    return lo, hi, lo == hi, np.ones_like(lo)


BEFORE: dict[str, Rule] = {"difference": before_difference, "relative": before_relative, "binary": before_binary,
                           "proportion": before_proportion, "kappa": delta_kappa}
AFTER: dict[str, Rule] = {"difference": after_difference, "relative": after_relative, "binary": after_difference,
                          "proportion": after_proportion, "kappa": after_kappa}
CANDIDATES: dict[str, dict[str, Rule]] = {
    "t": {"difference": before_difference, "relative": t_contrast_relative, "binary": before_binary,
          "proportion": before_proportion},
    "hall": {"difference": hall_difference, "relative": hall_relative},
}


def verdicts(lo: np.ndarray, hi: np.ndarray, blocked: np.ndarray, reach: np.ndarray, comparator: str,
             threshold: float) -> tuple[np.ndarray, np.ndarray]:
    """(supported, refuted) per row, as `decide` reads an interval for a '>=' or '>' claim: nothing where the metric
    cannot reach the threshold (untestable), the interval is undefined or it has zero width."""
    if comparator == ">=":
        sup, ref, testable = lo >= threshold, hi < threshold, reach >= threshold
    elif comparator == ">":
        sup, ref, testable = lo > threshold, hi <= threshold, reach > threshold
    else:
        raise ValueError(f"the per-side calibration covers '>=' and '>' claims, got {comparator!r}")
    ok = ~blocked & testable & np.isfinite(lo) & np.isfinite(hi)
    return ok & sup, ok & ref
