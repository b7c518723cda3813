"""Non-binding futility for sequential claims (issue #37 item 1): at a look before the last, the predictive
probability (flat prior; Spiegelhalter, Freedman & Blackburn 1986) that a claim still undecided crosses either of
its boundaries by its last look. Below `FUTILITY_BELOW` the claim may stop as "futile at look k".

Non-binding, as gsDesign's `test.type = 4`: the efficacy boundaries are those computed without futility, so path by
path a futile stop only turns a later verdict into an earlier "inconclusive"; it never makes a claim supported or
refuted, and each side's error can only go down.

The prediction works on the claim's own interval scale, whatever produced the interval: the standard error at look
k is its half-width over the look's normal quantile, the per-query spread is that times sqrt(n_k), and a later look
j would decide when the running mean's distance from the threshold exceeds z_j times the spread over sqrt(n_j).
With a flat prior the mean's posterior at look k is N(estimate, se_k^2); the sums of the queries still to come are
drawn from it. One remaining look has a closed form (`_one_look`); more are simulated with a fixed seed."""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TypeVar

import numpy as np
from harness.stats._scipy import stats as _st

FUTILITY_BELOW = 0.10  # the cut: a claim with under 10% chance of being decided by its last look stops
DRAWS = 20_000
_V = TypeVar("_V")


def _z(confidence: float) -> float:
    """Two-sided normal quantile of an interval's nominal confidence (inf at 1.0)."""
    return float(_st.norm.isf((1.0 - confidence) / 2.0)) if confidence < 1.0 else math.inf


def per_query_spread(ci: tuple[float, float], n: int, confidence: float) -> float:
    """The per-query standard deviation an interval of `confidence` over n queries implies (half-width over z,
    times sqrt(n)); nan where the interval says nothing (infinite z, non-finite bounds)."""
    z = _z(confidence)
    lo, hi = ci
    if not (math.isfinite(z) and z > 0 and math.isfinite(lo) and math.isfinite(hi)) or n < 1:
        return math.nan
    return (hi - lo) / 2.0 / z * math.sqrt(n)


def _one_look(estimate: float, spread: float, n_k: int, n_last: int, z_last: float, threshold: float) -> float:
    """P(the last look decides) in closed form: the final mean is N(estimate, spread^2 * m / (n_last * n_k)),
    m = n_last - n_k, and it decides outside threshold +- z_last * spread / sqrt(n_last)."""
    m = n_last - n_k
    sd_final = spread * math.sqrt(m / (n_last * n_k))
    half = z_last * spread / math.sqrt(n_last)
    if sd_final == 0.0:
        return float(abs(estimate - threshold) > half)
    return float(_st.norm.sf((threshold + half - estimate) / sd_final) + _st.norm.cdf((threshold - half - estimate)
                                                                                      / sd_final))


def decision_probability(estimate: float, ci: tuple[float, float], n_k: int, confidence_k: float,
                         later: Sequence[tuple[int, float]], threshold: float, *, draws: int = DRAWS,
                         seed: int = 0) -> float:
    """Predictive probability that a claim undecided at look k (estimate and interval over n_k queries at
    `confidence_k`) is decided at one of the `later` looks, given as (queries, nominal confidence) pairs, the
    last one last. nan where the spread cannot be read off the interval (nothing to predict from)."""
    spread = per_query_spread(ci, n_k, confidence_k)
    if not math.isfinite(spread) or not later:
        return math.nan
    looks = [(int(n), _z(c)) for n, c in later]
    if any(n <= n_k for n, _ in looks) or any(b <= a for (a, _), (b, _) in zip(looks, looks[1:])):
        raise ValueError(f"later looks must be increasing query counts above {n_k}, got {[n for n, _ in looks]}")
    if spread == 0.0:  # every query agreed so far: the mean cannot move under this prediction
        return float(any(abs(estimate - threshold) > 0.0 and math.isfinite(z) for _, z in looks))
    if len(looks) == 1:
        return _one_look(estimate, spread, n_k, looks[0][0], looks[0][1], threshold)
    rng = np.random.default_rng(seed)
    theta = rng.normal(estimate, spread / math.sqrt(n_k), draws)  # the flat prior's posterior of the mean
    total = np.full(draws, estimate * n_k)
    decided = np.zeros(draws, dtype=bool)
    prev = n_k
    for n, z in looks:
        step = n - prev
        total += rng.normal(theta * step, spread * math.sqrt(step))
        if math.isfinite(z):
            decided |= np.abs(total / n - threshold) > z * spread / math.sqrt(n)
        prev = n
    return float(decided.mean())


def futile_verdict(verdict: _V) -> _V:
    """The verdict a claim stopped as futile keeps: its look's own (inconclusive: the stop is non-binding)."""
    return verdict


def is_futile(probability: float, below: float = FUTILITY_BELOW) -> bool:
    """Whether a claim stops as futile: a predictive probability of a decision under `below` (nan never stops)."""
    return math.isfinite(probability) and probability < below
