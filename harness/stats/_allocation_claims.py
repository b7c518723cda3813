"""The claims of the allocator's calibration (`harness.stats.calibration_allocation`), every look of every claim at
once: the interval, the verdict and futility's decision probability a claim would read at each of its looks, so that
the simulated runs can replay each claim through `run_sequential` as often as the compared allocations need.

The intervals and verdicts are the per-side calibration's vectorised copies of the production path
(`harness.stats._sides_rules`, proven equal to `paired_effect` / `proportion_effect` -> `decide` by
tests/test_calibration_sides_equal.py); `decision_probabilities` is a copy of `harness.stats.futility.decision_probability`
for many claims at once, drawing the same normal variates (the same seed, in the same order) and rearranged so that a
claim costs a binary search instead of 20,000 draws, proven equal to it by tests/test_calibration_allocation.py.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
from harness.stats._scipy import stats as _st

from harness.stats import _sides_rules as rules
from harness.stats import calibration_sides as sides
from harness.stats import futility as _futility
from harness.stats.intervals import interval_sd

INCONCLUSIVE, SUPPORTED, REFUTED = 0, 1, 2
VERDICT_NAMES = ("inconclusive", "supported", "refuted")


@dataclass(frozen=True)
class ClaimRule:
    """How a claim is decided look by look: its looks, each look's interval (per claim kind) and confidence, and
    whether futility may stop it."""

    name: str
    looks: tuple[int, ...]
    intervals: Mapping[str, rules.Rule]
    confidence: float = 0.95
    futility: bool = True
    interval_method: str = "betting"


# the default anytime design of a 30-query claim (SequentialDesign.for_claim: looks 10/20/30, a 95% confidence
# sequence at each) with non-binding futility
ANYTIME = ClaimRule("anytime", (10, 20, 30), rules.AFTER)
# a broken allocator's claim: a look every 5 queries from the 10th, each read with the fixed-n 95% interval
PEEKING = ClaimRule("peeking every 5 queries with the fixed-n interval", (10, 15, 20, 25, 30), rules.BEFORE,
                    futility=False, interval_method="fixed-n")


@dataclass(frozen=True)
class ClaimLooks:
    """Per claim (rows) and look (columns): estimate, interval, verdict code, futility's decision probability (nan
    where it is not asked: a decided look, the last look, a rule without futility) and the fixed-n 95% interval."""

    rule: ClaimRule
    estimate: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    verdict: np.ndarray
    p: np.ndarray
    fixed_lo: np.ndarray
    fixed_hi: np.ndarray

    def fixed_sd(self, i: int, k: int) -> float:
        """The per-query SD of a Student-t 95% interval as wide as claim `i`'s fixed-n interval at look `k` (the
        pre-#36 rule of its kind): the `Effect.sd` the calibration's looks carry, which only the controls that swap in
        a fixed-n interval read (an interval of that width centred on the estimate; exact for the t interval of a
        difference, the same width but recentred for a rate's Wilson and a binary difference's Agresti-Min)."""
        return interval_sd(float(self.fixed_hi[i, k] - self.fixed_lo[i, k]) / 2.0, self.rule.looks[k])

    def stops_at(self, below: float) -> np.ndarray:
        """0-based look each claim stops at without a budget: its first decided look, else its first futile one
        (`below`), else the last."""
        k_last = len(self.rule.looks) - 1
        stop = np.zeros(self.verdict.shape[0], dtype=np.int64)
        open_ = np.ones(self.verdict.shape[0], dtype=bool)
        for k in range(k_last + 1):
            ends = (self.verdict[:, k] != INCONCLUSIVE) | (k == k_last)
            if self.rule.futility and k < k_last:
                ends |= np.isfinite(self.p[:, k]) & (self.p[:, k] < below)
            stop[open_ & ends] = k
            open_ &= ~ends
        return stop


def _one_look(est: np.ndarray, spread: np.ndarray, n_k: int, n_last: int, z_last: float,
              threshold: float) -> np.ndarray:
    """`futility._one_look` for many claims (its closed form, elementwise)."""
    sd_final = spread * math.sqrt((n_last - n_k) / (n_last * n_k))
    half = z_last * spread / math.sqrt(n_last)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = _st.norm.sf((threshold + half - est) / sd_final) + _st.norm.cdf((threshold - half - est) / sd_final)
    return np.where(sd_final == 0.0, (np.abs(est - threshold) > half).astype(float), p)


def decision_probabilities(estimate: np.ndarray, lo: np.ndarray, hi: np.ndarray, n_k: int, confidence_k: float,
                           later: Sequence[tuple[int, float]], threshold: float, *, draws: int = _futility.DRAWS,
                           seed: int = 0) -> np.ndarray:
    """`futility.decision_probability` for many claims at the same look: the same prediction, the same normal
    variates (one generator seeded `seed`, drawn in the production order), elementwise."""
    est = np.asarray(estimate, dtype=np.float64)
    z_k = _futility._z(confidence_k)
    lo_, hi_ = np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64)
    if not (math.isfinite(z_k) and z_k > 0 and n_k >= 1):
        spread = np.full(est.shape, np.nan)
    else:
        with np.errstate(invalid="ignore"):
            spread = np.where(np.isfinite(lo_) & np.isfinite(hi_), (hi_ - lo_) / 2.0 / z_k * math.sqrt(n_k), np.nan)
    out = np.full(est.shape, np.nan)
    if not later:
        return out
    looks = [(int(n), _futility._z(c)) for n, c in later]
    if any(n <= n_k for n, _ in looks) or any(b <= a for (a, _), (b, _) in zip(looks, looks[1:])):
        raise ValueError(f"later looks must be increasing query counts above {n_k}, got {[n for n, _ in looks]}")
    finite = np.isfinite(spread)
    flat = finite & (spread == 0.0)
    any_z = any(math.isfinite(z) for _, z in looks)
    out[flat] = ((np.abs(est[flat] - threshold) > 0.0) & any_z).astype(float)
    todo = np.flatnonzero(finite & ~flat)
    if len(looks) == 1:
        out[todo] = _one_look(est[todo], spread[todo], n_k, looks[0][0], looks[0][1], threshold)
        return out
    # with s the spread and u = (estimate − threshold)/s, the running sum at later look j is estimate·n_j + s·W_j,
    # W_j a sum of the same normal variates for every claim, and look j decides iff |u·n_j + W_j| > z_j·√n_j: a draw
    # leaves a claim undecided iff u lies in [max_j L_j, min_j R_j], L_j, R_j = (∓z_j·√n_j − W_j)/n_j
    rng = np.random.default_rng(seed)
    z0 = rng.standard_normal(draws)
    w = np.zeros(draws)
    lower, upper = np.full(draws, -np.inf), np.full(draws, np.inf)
    prev = n_k
    for n, zj in looks:
        step = n - prev
        w = w + (step / math.sqrt(n_k)) * z0 + math.sqrt(step) * rng.standard_normal(draws)
        if math.isfinite(zj):
            lower = np.maximum(lower, (-zj * math.sqrt(n) - w) / n)
            upper = np.minimum(upper, (zj * math.sqrt(n) - w) / n)
        prev = n
    ok = lower <= upper
    lower, upper = np.sort(lower[ok]), np.sort(upper[ok])
    u = (est[todo] - threshold) / spread[todo]
    undecided = np.searchsorted(lower, u, side="right") - np.searchsorted(upper, u, side="left")
    out[todo] = (draws - undecided) / draws
    return out


def _estimate(pop: sides.Population, A: np.ndarray, B: np.ndarray | None) -> np.ndarray:
    """The effect's point estimate as `paired_effect` / `proportion_effect` report it (a mean difference, a rate)."""
    if pop.kind == "proportion":
        return np.asarray(A.mean(axis=1), dtype=np.float64)
    if pop.kind == "relative":
        raise ValueError("relative claims are left out of the allocator's calibration (see its module docstring)")
    assert B is not None  # every kind but a rate has baseline scores
    return np.asarray((A - B).mean(axis=1), dtype=np.float64)


def claim_looks(pop: sides.Population, comparator: str, threshold: float, A: np.ndarray, B: np.ndarray | None,
                rule: ClaimRule, *, below: float = _futility.FUTILITY_BELOW) -> ClaimLooks:
    """Every look of claims of one population (rows of A, B: each claim's queries in the order it draws them)."""
    rows, K = A.shape[0], len(rule.looks)
    est, lo, hi, p, flo, fhi = (np.full((rows, K), np.nan) for _ in range(6))
    verdict = np.zeros((rows, K), dtype=np.int8)
    for k, n in enumerate(rule.looks):
        a, b = A[:, :n], None if B is None else B[:, :n]
        lo[:, k], hi[:, k], blocked, reach = rule.intervals[pop.kind](a, b, rule.confidence, threshold, pop.bounds)
        sup, ref = rules.verdicts(lo[:, k], hi[:, k], blocked, reach, comparator, threshold)
        verdict[:, k] = np.where(sup, SUPPORTED, np.where(ref, REFUTED, INCONCLUSIVE))
        est[:, k] = _estimate(pop, a, b)
        flo[:, k], fhi[:, k], _, _ = rules.BEFORE[pop.kind](a, b, 0.95, threshold, pop.bounds)
    looks = ClaimLooks(rule, est, lo, hi, verdict, p, flo, fhi)
    if rule.futility:
        alive = np.ones(rows, dtype=bool)
        for k, n in enumerate(rule.looks[:-1]):
            alive &= verdict[:, k] == INCONCLUSIVE
            ask = np.flatnonzero(alive)
            later = [(m, rule.confidence) for m in rule.looks[k + 1:]]
            p[ask, k] = decision_probabilities(est[ask, k], lo[ask, k], hi[ask, k], n, rule.confidence, later,
                                               threshold)
            alive &= ~(np.isfinite(p[:, k]) & (p[:, k] < below))
    return looks
