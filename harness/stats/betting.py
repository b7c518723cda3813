"""Confidence sequences for the mean of bounded values by betting (Waudby-Smith & Ramdas, "Estimating means of
bounded random variables by betting", JRSS B 86(1), 2024, §4 "hedged capital" with predictable plug-in bets).

For values x_1, x_2, … in [lower, upper] (rescaled to [0, 1]) and a candidate mean m, two gamblers bet that the
mean is above m (capital K⁺) and below it (K⁻):

    K⁺_t(m) = Π_{i≤t} (1 + λ⁺_i(m)·(x_i − m)),   K⁻_t(m) = Π_{i≤t} (1 − λ⁻_i(m)·(x_i − m)),

with predictable bets λ_i = sqrt(2·log(2/α) / (σ̂²_{i−1}·i·log(1 + i))) truncated at c/m (K⁺) and c/(1 − m) (K⁻),
σ̂²_i = (1/4 + Σ_{j≤i} (x_j − μ̂_j)²)/(i + 1), μ̂_i = (1/2 + Σ_{j≤i} x_j)/(i + 1). Under the true mean each capital is
a nonnegative martingale, so by Ville's inequality it ever reaches 2/α with probability at most α/2: the set
{m : K⁺_t(m) < 2/α and K⁻_t(m) < 2/α} covers the mean at every t simultaneously with probability ≥ 1 − α, each side
failing at most α/2, whatever the distribution in [lower, upper] (skewed, tied, discrete) and however the looks
were chosen. K⁺ is nonincreasing and K⁻ nondecreasing in m, so each bound is found by bisection.

The bets are the paper's (and `confseq.betting.betting_cs`'s) defaults except the truncation c = 3/4 (the paper
recommends 1/2 or 3/4; `confseq` uses 1/2): the bounds are found by bisection to 1e-10 rather than on a grid.
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

from harness.stats.intervals import Floats

TRUNCATION = 0.75
_ITERATIONS = 48  # bisection steps: 2^-48 of the range
_EPS = 1e-12
_STACK = 20_000  # at most this many values (rows × n): both bounds bisected in one pass


def bets(x: np.ndarray, alpha: float) -> np.ndarray:
    """The predictable plug-in bets λ_t for rows of values in [0, 1] (shape (rows, n)), before truncation."""
    n = x.shape[1]
    t = np.arange(1, n + 1, dtype=np.float64)
    mu = np.minimum((0.5 + np.cumsum(x, axis=1)) / (t + 1), 1.0)
    s2 = (0.25 + np.cumsum((x - mu) ** 2, axis=1)) / (t + 1)
    s2_prev = np.concatenate([np.full((x.shape[0], 1), 0.25), s2[:, :-1]], axis=1)
    return np.sqrt(2 * math.log(2 / alpha) / (s2_prev * t * np.log1p(t)))


def log_capital(x: np.ndarray, lam: np.ndarray, m: np.ndarray, side: int | np.ndarray,
                c: float = TRUNCATION) -> np.ndarray:
    """log K⁺_n(m) (side +1) or log K⁻_n(m) (side −1) of each row of x at the row's candidate mean m (shape (rows,));
    `side` may also be one ±1 per row."""
    mm = m[:, None]
    sd: int | np.ndarray
    if isinstance(side, np.ndarray):
        sd = side[:, None]
        cap = c / np.maximum(np.where(sd > 0, mm, 1 - mm), _EPS)
    else:
        sd, cap = side, (c / np.maximum(mm, _EPS) if side > 0 else c / np.maximum(1 - mm, _EPS))
    return np.asarray(np.sum(np.log1p(sd * np.minimum(lam, cap) * (x - mm)), axis=1), dtype=np.float64)


def betting_bounds(rows: np.ndarray, lower: float | np.ndarray, upper: float | np.ndarray, *,
                   confidence: float = 0.95, c: float = TRUNCATION) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) of the betting confidence sequence at time n for each row of `rows` (shape (rows, n)), values in
    [lower, upper] (scalars, or one range per row); n = 0 gives the whole range."""
    x = np.atleast_2d(np.asarray(rows, dtype=np.float64))
    k = x.shape[0]
    lo_b = np.broadcast_to(np.asarray(lower, dtype=np.float64), (k,))
    hi_b = np.broadcast_to(np.asarray(upper, dtype=np.float64), (k,))
    if not np.all(hi_b > lo_b):
        raise ValueError(f"the values' range must have upper > lower, got [{lower}, {upper}]")
    if x.shape[1] == 0:
        return lo_b.copy(), hi_b.copy()
    span = (hi_b - lo_b)[:, None]
    u = (x - lo_b[:, None]) / span
    if u.min() < -1e-9 or u.max() > 1 + 1e-9:
        raise ValueError(f"values outside their declared range [{lower}, {upper}]")
    u = np.clip(u, 0.0, 1.0)
    alpha = 1 - confidence
    lam = bets(u, alpha)
    thr = math.log(2 / alpha)
    if k * x.shape[1] <= _STACK:  # few values: numpy's per-call overhead dominates, both gamblers in one pass
        bound = _bisect(np.concatenate([u, u]), np.concatenate([lam, lam]), np.repeat([True, False], k), thr, c)
        low, high = bound[:k], bound[k:]
    else:  # many: one gambler after the other, half the memory
        low, high = (_bisect(u, lam, np.full(k, up), thr, c) for up in (True, False))
    return lo_b + low * (hi_b - lo_b), lo_b + high * (hi_b - lo_b)


def _bisect(u: np.ndarray, lam: np.ndarray, up: np.ndarray, thr: float, c: float) -> np.ndarray:
    """Each row's bound in [0, 1] by bisection: where K⁺ (rows with `up`, nonincreasing in m) falls below exp(thr)
    (the lower bound), or K⁻ (the others, nondecreasing) rises to it (the upper bound); the range's end where the
    gambler never reaches it."""
    side = np.where(up, 1.0, -1.0)
    a, b = np.full(len(up), _EPS), np.full(len(up), 1 - _EPS)
    rejected_at_edge = log_capital(u, lam, np.where(up, a, b), side, c) >= thr
    for _ in range(_ITERATIONS):
        mid = (a + b) / 2
        moves_a = (log_capital(u, lam, mid, side, c) >= thr) == up  # K⁺ rejected, or K⁻ not rejected, at mid
        a, b = np.where(moves_a, mid, a), np.where(moves_a, b, mid)
    return np.asarray(np.where(rejected_at_edge, np.where(up, b, a), np.where(up, 0.0, 1.0)))


def betting_covers(rows: np.ndarray, lower: float | np.ndarray, upper: float | np.ndarray,
                   value: float | np.ndarray, *, confidence: float = 0.95, c: float = TRUNCATION) -> np.ndarray:
    """Whether each row's betting confidence sequence at time n holds `value` (a scalar, or one per row): what
    `betting_bounds`' low <= value <= high says, read from one capital per side at `value` instead of a bisection
    for each bound (K⁺ nonincreasing and K⁻ nondecreasing in m, so m is in the sequence exactly when neither
    gambler's capital at m has reached 2/α; `value` is clipped to the bisection's [ε, 1 − ε] as the bounds are).
    Rows of n = 0 hold every value of their range."""
    x = np.atleast_2d(np.asarray(rows, dtype=np.float64))
    k = x.shape[0]
    lo_b = np.broadcast_to(np.asarray(lower, dtype=np.float64), (k,))
    hi_b = np.broadcast_to(np.asarray(upper, dtype=np.float64), (k,))
    v = np.broadcast_to(np.asarray(value, dtype=np.float64), (k,))
    if not np.all(hi_b > lo_b):
        raise ValueError(f"the values' range must have upper > lower, got [{lower}, {upper}]")
    inside = (lo_b <= v) & (v <= hi_b)
    if x.shape[1] == 0:
        return np.asarray(inside)
    span = (hi_b - lo_b)[:, None]
    u = (x - lo_b[:, None]) / span
    if u.min() < -1e-9 or u.max() > 1 + 1e-9:
        raise ValueError(f"values outside their declared range [{lower}, {upper}]")
    u = np.clip(u, 0.0, 1.0)
    alpha = 1 - confidence
    lam = bets(u, alpha)
    thr = math.log(2 / alpha)
    m = np.clip((v - lo_b) / (hi_b - lo_b), _EPS, 1 - _EPS)
    return np.asarray(inside & (log_capital(u, lam, m, +1, c) < thr) & (log_capital(u, lam, m, -1, c) < thr))


def betting_interval(values: Floats, lower: float, upper: float, *, confidence: float = 0.95,
                     c: float = TRUNCATION) -> tuple[float, float]:
    """The betting confidence sequence for the mean of `values` (each in [lower, upper]) at time len(values)."""
    lo, hi = betting_bounds(np.asarray(values, dtype=np.float64)[None, :], lower, upper, confidence=confidence, c=c)
    return float(lo[0]), float(hi[0])


def inverted_interval(accepts: Callable[[np.ndarray], np.ndarray], grid: np.ndarray, *, below: float, above: float,
                      points: int = 65, rounds: int = 5) -> tuple[float, float]:
    """The values a test accepts (`accepts(values)`: one bool per value), inverted over the sorted `grid`: its first
    and last accepted points, each refined on `rounds` finer grids of `points` between its last rejected and first
    accepted neighbour; an end at the grid's edge reads `below` / `above`; (nan, nan) where none is accepted (a
    test-inverted, Fieller-type interval: `harness.stats._effect`'s betting ratio, `harness.stats.kappa`)."""
    def refine(outside: float, inside: float) -> float:
        for _ in range(rounds):
            fine = np.linspace(outside, inside, points)
            k = int(np.argmax(accepts(fine)))  # the last point, `inside`, is accepted
            outside, inside = float(fine[k - 1]), float(fine[k])
        return inside

    ok = accepts(grid)
    if not ok.any():
        return (float("nan"), float("nan"))
    i, j = int(np.argmax(ok)), int(len(ok) - 1 - np.argmax(ok[::-1]))
    lo = refine(float(grid[i - 1]), float(grid[i])) if i > 0 else below
    hi = refine(float(grid[j + 1]), float(grid[j])) if j < len(grid) - 1 else above
    return (lo, hi)
