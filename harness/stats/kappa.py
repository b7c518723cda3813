"""Cohen's κ of a judge against labels whose shares the study fixed, as a ratio of per-item means: its betting
confidence sequence (anytime-valid: what a claim decided in looks reads) and its linear contrast at a threshold.

A labelled set such as HaluEval's items (`harness.judge.labelled.halueval_items`) fixes the share r of items labelled
"supported" by design. Chance agreement is then p_e = r·P(judge says supported) + (1 − r)·P(judge says unsupported),
a failed ruling agreeing with neither label: the mean of e_i = r·[v_i = supported] + (1 − r)·[v_i = unsupported].
So κ = (p_o − p_e) / (1 − p_e) = mean(u) / mean(w) with u_i = [v_i = y_i] − e_i and w_i = 1 − e_i, and κ ≥ θ exactly
when mean(L) ≥ 0 for L_i = u_i − θ·w_i = [v_i = y_i] − θ − e_i·(1 − θ), whose values lie in
[−θ − m·(1 − θ), 1 − θ] (m = max(r, 1 − r), θ ≤ 1). Each L is a bounded per-item value, so its mean has a betting
confidence sequence (`harness.stats.betting`), holding each side at α/2 at every look; κ's interval is the set of θ
whose contrast's sequence holds 0 (test inversion, as `harness.stats._effect`'s betting ratio), and a verdict
decides on the contrast at the claim's own threshold (`kappa_contrast`), as a relative claim does.

On the whole set with r its labels' share, mean(u) / mean(w) is `harness.judge.reliability.cohen_kappa` with a
failed ruling a category of its own (tested equal); on a prefix it is κ with the labels' shares taken as the
design's, not the prefix's.
"""
from __future__ import annotations

import math
from dataclasses import replace
from typing import Sequence

import numpy as np

from harness.stats._effect import Effect
from harness.stats.betting import betting_covers, betting_interval, inverted_interval
from harness.stats.intervals import Interval

__all__ = ["contrast_range", "kappa_contrast", "kappa_range", "kappa_sequence", "kappa_terms"]

_GRID = 257  # points over κ's range [−1, 1] for the test inversion
_REFINE = (65, 5)  # then `rounds` finer grids of `points` at each end


def kappa_terms(verdicts: Sequence[bool | None], labels: Sequence[bool], right_share: float
                ) -> tuple[np.ndarray, np.ndarray]:
    """Per item (u_i, w_i), κ = mean(u) / mean(w): u_i = [v_i = y_i] − e_i, w_i = 1 − e_i, e_i the item's chance
    agreement (`right_share` where the judge said supported, 1 − `right_share` where it said unsupported, 0 where its
    ruling failed: None)."""
    if len(verdicts) != len(labels):
        raise ValueError(f"{len(verdicts)} verdicts for {len(labels)} labels")
    if not 0.0 < right_share < 1.0:
        raise ValueError(f"the labels' share of 'supported' must lie strictly between 0 and 1, got {right_share}")
    agree = np.array([v is not None and v == y for v, y in zip(verdicts, labels)], dtype=np.float64)
    chance = np.array([0.0 if v is None else (right_share if v else 1.0 - right_share) for v in verdicts],
                      dtype=np.float64)
    return agree - chance, 1.0 - chance


def contrast_range(right_share: float, threshold: float) -> Interval:
    """A range holding every L = [v = y] − θ − e·(1 − θ) (e in [0, m], m = max(r, 1 − r); θ ≤ 1): its lower end is
    reached (a wrong ruling on the larger label), its upper end 1 − θ is not (an agreeing ruling has e ≥ 1 − m), a
    valid bound the betting sequence is measured with (CALIB-SIDES-KAPPA-*)."""
    m = max(right_share, 1.0 - right_share)
    return (-threshold - m * (1.0 - threshold), 1.0 - threshold)


def kappa_range(right_share: float) -> Interval:
    """The values κ can take with the labels' share fixed at r: [−m/(1 − m), 1], m = max(r, 1 − r) (κ ≥ −1 only for
    r = 1/2: with fewer labels of one kind, a judge wrong on every item is further below chance)."""
    m = max(right_share, 1.0 - right_share)
    return (-m / (1.0 - m), 1.0)


def _covers(u: np.ndarray, w: np.ndarray, right_share: float, thetas: np.ndarray, confidence: float) -> np.ndarray:
    """Whether the contrast's confidence sequence holds 0 at each θ of `thetas` (θ ≤ 1)."""
    lo, hi = zip(*(contrast_range(right_share, float(t)) for t in thetas))
    rows = u[None, :] - thetas[:, None] * w[None, :]
    return betting_covers(rows, np.array(lo), np.array(hi), 0.0, confidence=confidence)


def _inverted(u: np.ndarray, w: np.ndarray, right_share: float, confidence: float) -> Interval:
    """The θ in κ's range (`kappa_range`) whose contrast's sequence holds 0: the accepted points of a grid (with the
    estimate), each end refined on finer grids between its last rejected and first accepted point; an end at the
    range's edge stays there; (nan, nan) where no θ is accepted."""
    def accepts(t: np.ndarray) -> np.ndarray:
        return _covers(u, w, right_share, np.asarray(t, dtype=np.float64), confidence)

    est = float(u.mean() / w.mean())
    bottom, top = kappa_range(right_share)
    theta = np.union1d(np.linspace(bottom, top, _GRID), [min(max(est, bottom), top)])
    return inverted_interval(accepts, theta, below=bottom, above=top, points=_REFINE[0], rounds=_REFINE[1])


def kappa_sequence(verdicts: Sequence[bool | None], labels: Sequence[bool], *, right_share: float,
                   confidence: float = 0.95) -> Effect:
    """κ on these items (labels' share of "supported" taken as the design's `right_share`) with its betting
    confidence sequence at `confidence` (interval_method "betting": anytime-valid); `sd` the delta method's, for
    the queries needed; the per-item (u, w) kept as the effect's pairs, which `kappa_contrast` decides on."""
    u, w = kappa_terms(verdicts, labels, right_share)
    n = len(u)
    if n == 0:
        return Effect("kappa", math.nan, (math.nan, math.nan), 0, math.nan, confidence=confidence,
                      interval_method="betting")
    est = float(u.mean() / w.mean())  # w >= 1 − m > 0
    psi = (u - est * w) / w.mean()
    sd = float(psi.std(ddof=1)) if n > 1 else math.nan
    m = max(right_share, 1.0 - right_share)
    return Effect("kappa", est, _inverted(u, w, right_share, confidence), n, sd, confidence=confidence,
                  interval_method="betting", attainable=kappa_range(right_share), bounds=(-m, 1.0),
                  pairs=(tuple(u.tolist()), tuple(w.tolist())))


def kappa_contrast(effect: Effect, threshold: float) -> Effect:
    """κ as its linear contrast at the claim's threshold θ: L_i = u_i − θ·w_i, whose mean is ≥ 0 exactly when κ ≥ θ.
    Its betting interval (at the effect's confidence) is put on κ's scale, θ + [lo, hi] / mean(w), so that it lies
    wholly above (below) θ exactly when the contrast's lies above (below) 0. An effect that is not a κ sequence
    (another kind, another interval, no per-item values) is returned unchanged."""
    if effect.kind != "kappa" or effect.pairs is None or effect.interval_method != "betting" or effect.bounds is None:
        return effect
    u, w = (np.asarray(x, dtype=np.float64) for x in effect.pairs)
    if not len(u) or not threshold <= 1.0:
        return effect
    right_share = -float(effect.bounds[0])  # m = max(r, 1 − r): the range depends on r only through it
    lo, hi = betting_interval(u - threshold * w, *contrast_range(right_share, threshold), confidence=effect.confidence)
    mw = float(w.mean())
    lin = u - threshold * w
    sd = float(lin.std(ddof=1)) / mw if len(lin) > 1 else math.nan
    bottom, top = kappa_range(right_share)  # cut to κ's range: the side θ lies on is unchanged (θ <= 1)
    return replace(effect, ci=(max(float(threshold + lo / mw), bottom), min(float(threshold + hi / mw), top)), sd=sd,
                   interval_method=f"betting on the linear contrast u - {threshold:g}·w")
