"""The betting interval of a ratio (`paired_effect(relative=True, interval="betting")`) reads each candidate ratio's
acceptance from one capital per side (`betting_covers`) instead of bisecting for the contrast's bounds: the same
ratios accepted, so the same interval as the grid search it replaced (kept here as the oracle), on recorded real
per-query scores and skewed, tied and binary samples."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from harness.stats._effect import _betting_ratio, _contrast_range, paired_effect
from harness.stats.betting import betting_bounds, betting_covers

pytestmark = pytest.mark.unit
RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "calibration" / "per_query_scores.json"


def _grid_ratio(a: np.ndarray, b: np.ndarray, bounds: tuple[float, float], confidence: float, points: int = 65,
                rounds: int = 5) -> tuple[float, float]:
    """The interval as computed before (d2cbb2c's `_betting_ratio`): each ratio accepted when the contrast's betting
    bounds, each found by bisection, hold 0."""
    top = 4.0 * float(bounds[1]) / float(b.mean())

    def accepts(rho: np.ndarray) -> np.ndarray:
        r = np.asarray(rho, dtype=np.float64)
        lo_r, hi_r = zip(*(_contrast_range(bounds, x - 1.0) for x in r))
        lo, hi = betting_bounds(a[None, :] - r[:, None] * b[None, :], np.array(lo_r), np.array(hi_r),
                                confidence=confidence)
        return (lo <= 0.0) & (0.0 <= hi)

    def refine(outside: float, inside: float) -> float:
        for _ in range(rounds):
            grid = np.linspace(outside, inside, points)
            k = int(np.argmax(accepts(grid)))
            outside, inside = float(grid[k - 1]), float(grid[k])
        return inside

    rho = np.union1d(np.linspace(0.0, top, 4 * (points - 1) + 1), [float(a.mean()) / float(b.mean())])
    ok = accepts(rho)
    if not ok.any():
        return (float("nan"), float("nan"))
    i, j = int(np.argmax(ok)), int(len(ok) - 1 - np.argmax(ok[::-1]))
    lo = refine(float(rho[i - 1]), float(rho[i])) if i > 0 else 0.0
    hi = refine(float(rho[j + 1]), float(rho[j])) if j < len(rho) - 1 else float("inf")
    return (lo - 1.0, hi - 1.0)


def _cases() -> list[tuple[str, float, np.ndarray, np.ndarray]]:
    """(name, confidence, candidate, baseline): claims drawn from recorded real runs at a first look, an interim look
    and the whole set, at the levels sequential looks use; skewed scores with zeros; paired 0/1 outcomes."""
    sets = json.loads(RECORDED.read_text())["sets"]
    cr, hq = ({k: np.asarray(v, float) for k, v in sets[s].items()} for s in ("cranfield", "halueval-qa"))
    real = [("cranfield Recall@10 hybrid/dense", cr["hybrid:Recall@10"], cr["dense:Recall@10"]),
            ("cranfield nDCG@10 bm25/dense", cr["bm25:nDCG@10"], cr["dense:nDCG@10"]),
            ("halueval-qa Recall@10 bm25/dense", hq["bm25:Recall@10"], hq["dense:Recall@10"]),
            ("halueval-qa nDCG@10 hybrid/dense", hq["hybrid:nDCG@10"], hq["dense:nDCG@10"])]
    rng = np.random.default_rng(39)
    out = []
    for name, c, b in real:
        for n, conf in ((10, 0.95), (30, 0.99), (90, 0.999), (225, 0.95)):
            idx = rng.integers(0, len(c), n)
            out.append((f"{name} n={n}", conf, c[idx], b[idx]))
    for n in (10, 40, 120):
        b = rng.beta(0.5, 2.0, n)
        c = np.clip(b * rng.uniform(0.8, 1.6, n), 0.0, 1.0)
        c[rng.random(n) < 0.2] = 0.0
        out.append((f"skewed with zeros n={n}", 0.95, c, b))
        out.append((f"0/1 outcomes n={n}", 0.95, (rng.random(n) < 0.6) * 1.0, (rng.random(n) < 0.4) * 1.0))
    out.append(("every pair tied n=20", 0.95, np.full(20, 0.5), np.full(20, 0.5)))
    return [case for case in out if case[3].mean() > 0]


def test_the_ratio_interval_is_the_grid_searchs():
    """Equal to the grid search it replaced, end by end, within that search's last step (it is the same grid, so in
    practice to the bit), and unbounded where it was."""
    cases = _cases()
    assert len(cases) >= 20
    for name, conf, c, b in cases:
        old = _grid_ratio(c, b, (0.0, 1.0), conf)
        new = _betting_ratio(c, b, (0.0, 1.0), conf)
        step = 4.0 / b.mean() / 256 / 64 ** 5  # the old search's finest grid step
        for o, w in zip(old, new):
            assert (np.isnan(o) and np.isnan(w)) or o == w or abs(o - w) <= step, (name, old, new)
    e = paired_effect(cases[0][2], cases[0][3], relative=True, interval="betting", confidence=cases[0][1])
    assert e.ci == _grid_ratio(cases[0][2], cases[0][3], (0.0, 1.0), cases[0][1])  # the production path uses it


def test_the_ratio_interval_ends_where_the_contrast_stops_holding_zero():
    """Read against the contrast's own betting bounds: the ends are accepted ratios, a ratio a little outside either
    end is not."""
    for name, conf, c, b in _cases()[:8]:
        lo, hi = _betting_ratio(c, b, (0.0, 1.0), conf)
        for theta, inside in ((lo, True), (hi, True), (lo - 1e-6, False), (hi + 1e-6, False)):
            if not np.isfinite(theta) or 1 + theta < 0:
                continue
            clo, chi = betting_bounds((c - (1 + theta) * b)[None, :], *_contrast_range((0.0, 1.0), theta),
                                      confidence=conf)
            assert bool(clo[0] <= 0.0 <= chi[0]) == inside, (name, theta, inside)


def test_covers_is_the_bounds_read_at_a_value():
    """`betting_covers` says low <= value <= high of `betting_bounds`, row by row, for values spread over the range and
    a hair inside and outside each bound."""
    rng = np.random.default_rng(5)
    rows = rng.uniform(-1, 1, (6, 40)) ** 3
    lo, hi = betting_bounds(rows, -1.0, 1.0)
    for v in np.linspace(-1.0, 1.0, 41):
        assert np.array_equal(betting_covers(rows, -1.0, 1.0, v), (lo <= v) & (v <= hi)), v
    for eps, inside in ((1e-9, True), (-1e-9, False)):
        assert np.all(betting_covers(rows, -1.0, 1.0, lo + eps) == inside)
        assert np.all(betting_covers(rows, -1.0, 1.0, hi - eps) == inside)
    # one value per row, a level of its own, a row with no values holds its whole range and no more
    assert np.array_equal(betting_covers(rows, -1.0, 1.0, rows.mean(axis=1), confidence=0.99), np.ones(6, bool))
    assert betting_covers(np.zeros((1, 0)), 0.0, 1.0, 0.3)[0] and not betting_covers(np.zeros((1, 0)), 0.0, 1.0, 1.3)[0]
    with pytest.raises(ValueError, match="outside"):
        betting_covers(np.array([[0.5, 1.5]]), 0.0, 1.0, 0.5)


def test_covers_agrees_with_confseq():
    """Against `confseq.betting.betting_cs` (tests/test_one_sided.py's recorded bounds, on a grid of 1/4000): values
    inside its interval are held, values more than a grid step outside are not."""
    from tests.test_one_sided import CONFSEQ, _confseq_cases

    for (name, c), (ref_lo, ref_hi) in sorted(CONFSEQ.items()):
        x = _confseq_cases()[name][None, :]
        for v, held in ((ref_lo + 2 / 4000, True), ((ref_lo + ref_hi) / 2, True), (ref_hi - 2 / 4000, True),
                        (ref_lo - 2 / 4000, False), (ref_hi + 2 / 4000, False)):
            if 0.0 <= v <= 1.0:
                assert betting_covers(x, 0.0, 1.0, v, c=c)[0] == held, (name, c, v)


def test_many_rows_bisect_as_one_row_does():
    """`betting_bounds` bisects both bounds of few values in one pass and those of many one side after the other: the
    same bounds, bit for bit, row by row."""
    from harness.stats import betting

    rng = np.random.default_rng(11)
    rows = rng.beta(0.4, 1.5, (120, 225)) - rng.beta(0.4, 1.5, (120, 225))
    assert rows.size > betting._STACK >= rows.shape[1]
    lo, hi = betting_bounds(rows, -1.0, 1.0, confidence=0.99)
    for i in range(0, 120, 7):
        one = betting_bounds(rows[i:i + 1], -1.0, 1.0, confidence=0.99)
        assert (one[0][0], one[1][0]) == (lo[i], hi[i])
        assert lo[i] < rows[i].mean() < hi[i]
