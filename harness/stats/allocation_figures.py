"""The figures of the allocator's calibration (`harness.stats.calibration_allocation`), read from the outcome codes
of one allocation of every claim: per-side error and coverage over the claims it started, power lost against the
same claims without a budget, claims decided and seconds past the budget per run."""
from __future__ import annotations

import math

import numpy as np

from harness.stats.calibration_allocation import BUDGET, CATEGORIES, INCONCLUSIVE, NOT_STARTED, REFUTED, SUPPORTED


def side_errors(code: np.ndarray, category: np.ndarray) -> tuple[float, float, int]:
    """(false supported, false refuted, claims) over the claims started with their truth at the threshold."""
    at = (np.asarray(category) == 0) & (np.asarray(code) != NOT_STARTED)
    n = int(at.sum())
    if n == 0:
        return math.nan, math.nan, 0
    return float(np.mean(code[at] == SUPPORTED)), float(np.mean(code[at] == REFUTED)), n


def coverage(code: np.ndarray, lo: np.ndarray, hi: np.ndarray, truth: np.ndarray, category: np.ndarray,
             among: np.ndarray | None = None) -> dict[str, tuple[float, int]]:
    """Per truth category: the share of started claims (of those `among`, where given) whose reported interval holds
    their truth, and how many."""
    out = {}
    for c, name in enumerate(CATEGORIES):
        m = (np.asarray(category) == c) & (np.asarray(code) != NOT_STARTED)
        if among is not None:
            m &= np.asarray(among, dtype=bool)
        held = (lo[m] <= truth[m]) & (truth[m] <= hi[m])
        out[name] = (float(held.mean()) if m.any() else math.nan, int(m.sum()))
    return out


def coverage_cells(code: np.ndarray, lo: np.ndarray, hi: np.ndarray, truth: np.ndarray, population: np.ndarray,
                   category: np.ndarray, side: np.ndarray) -> dict[tuple[int, int, int], tuple[float, int]]:
    """Per (population, truth category, side) with a started claim: the share of its started claims whose reported
    interval holds their truth (the same truth for all of them), and how many."""
    started = np.asarray(code) != NOT_STARTED
    out = {}
    for key in sorted({(int(p), int(c), int(s)) for p, c, s in zip(population[started], category[started],
                                                                    side[started])}):
        m = started & (population == key[0]) & (category == key[1]) & (side == key[2])
        out[key] = (float(((lo[m] <= truth[m]) & (truth[m] <= hi[m])).mean()), int(m.sum()))
    return out


def stopped_early(code: np.ndarray, looks: np.ndarray, n_looks: int) -> np.ndarray:
    """The claims stopped undecided before their last look: refused a look by the budget, or futile."""
    return np.asarray((code == BUDGET) | ((code == INCONCLUSIVE) & (np.asarray(looks) < n_looks)))


def right_verdict(code: np.ndarray, side: np.ndarray) -> np.ndarray:
    """Whether each claim read the verdict its truth calls for: supported on the claim's side, refuted on the other
    (never at the threshold)."""
    return np.where(side > 0, code == SUPPORTED, np.where(side < 0, code == REFUTED, False))


def power_loss(unbudgeted: np.ndarray, budgeted: np.ndarray, category: np.ndarray,
               side: np.ndarray) -> tuple[float, float, float, int]:
    """(loss, power without a budget, power with it, claims) over the one-MDE claims the budgeted run started: the
    share decided the right way without the budget minus with it, on the same claims."""
    m = (np.asarray(category) == 1) & (np.asarray(budgeted) != NOT_STARTED)
    n = int(m.sum())
    if n == 0:
        return math.nan, math.nan, math.nan, 0
    without = float(right_verdict(unbudgeted[m], side[m]).mean())
    with_ = float(right_verdict(budgeted[m], side[m]).mean())
    return without - with_, without, with_, n


def decided_per_run(code: np.ndarray, runs: int) -> np.ndarray:
    """Claims decided (supported or refuted) in each run."""
    return np.asarray(np.isin(code, (SUPPORTED, REFUTED)).reshape(runs, -1).sum(axis=1))


def overrun(spent: np.ndarray, limit: np.ndarray) -> np.ndarray:
    """Seconds spent past the budget in each run (negative: within it)."""
    return np.asarray(spent, dtype=np.float64) - np.asarray(limit, dtype=np.float64)
