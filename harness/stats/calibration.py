"""Calibration of the harness's tests and intervals on real per-topic scores (Urbano, Lima & Hanjalic,
"Statistical Significance Testing in Information Retrieval: An Empirical Analysis of Type I, Type II and
Type III Errors", SIGIR 2019): seeded, vectorised simulations over the scores of two real runs.

- `type1_rates`: A/A comparisons → the rejection rate of each test at α. By default (`null="copula"`, after
  Urbano et al.) new topics are simulated from two real runs' dependence (a Gaussian copula of their normal
  scores) with one run's margin for both, so the two systems are equally good on every topic distribution and
  no test's own resampling scheme is the null; `null="swap"` swaps each real topic's pair with probability 1/2
  (the sign-flip null, which the permutation test holds by construction), kept for comparison;
- `coverage`: topics resampled from the real topics as the population (the true effect is the population's)
  → how often each interval method covers it, for the mean difference and the relative improvement;
- `power_at_prediction`: a known effect planted on a random share of topics → the measured power of the
  verdict rule at the sample size the harness predicts for 80% power.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

import numpy as np
from harness.stats._scipy import stats as _st

from harness.stats._verdict import minimum_detectable_effect
from harness.stats.intervals import Floats

if TYPE_CHECKING:
    from harness.stats.sequential import SequentialDesign

TYPE1_TESTS = ("t", "permutation", "wilcoxon", "mcnemar", "bootstrap-t", "bootstrap-percentile", "bootstrap-bca")
INTERVALS = ("t", "percentile", "bca")


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def _t_bounds(D: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    n = D.shape[1]
    m = D.mean(axis=1)
    half = _st.t.ppf(1 - alpha / 2, n - 1) * D.std(axis=1, ddof=1) / np.sqrt(n)
    return m - half, m + half


def _quantile_rows(R: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Per-row quantile (linear interpolation, as numpy's default) of the rows of R at per-row levels q."""
    S = np.sort(R, axis=1)
    B = S.shape[1]
    pos = np.clip(q, 0, 1) * (B - 1)
    lo = np.floor(pos).astype(int)
    hi = np.minimum(lo + 1, B - 1)
    frac = pos - lo
    rows = np.arange(S.shape[0])
    q_rows: np.ndarray = S[rows, lo] * (1 - frac) + S[rows, hi] * frac
    return q_rows


def _weights(n: int, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    return rng.multinomial(n, np.full(n, 1.0 / n), size=n_boot).astype(np.float64)


def _percentile_bounds(R: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    return np.quantile(R, alpha / 2, axis=1), np.quantile(R, 1 - alpha / 2, axis=1)


def _bca_bounds(theta: np.ndarray, R: np.ndarray, J: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Vectorised BCa: theta (sims,), bootstrap replicates R (sims, B), jackknife values J (sims, n)."""
    B = R.shape[1]
    prop = (np.sum(R < theta[:, None], axis=1) + 0.5 * np.sum(R == theta[:, None], axis=1)) / B
    prop = np.clip(prop, 1.0 / (B + 1), 1 - 1.0 / (B + 1))
    z0 = _st.norm.ppf(prop)
    dev = J.mean(axis=1, keepdims=True) - J
    num = np.sum(dev**3, axis=1)
    den = 6.0 * np.sum(dev**2, axis=1) ** 1.5
    acc = np.divide(num, den, out=np.zeros_like(num), where=den > 0)
    out = []
    for q in (alpha / 2, 1 - alpha / 2):
        zq = _st.norm.ppf(q)
        out.append(_quantile_rows(R, _st.norm.cdf(z0 + (z0 + zq) / (1 - acc * (z0 + zq)))))
    return out[0], out[1]


def _t_pvalues(D: np.ndarray) -> np.ndarray:
    n = D.shape[1]
    sd = D.std(axis=1, ddof=1)
    m = D.mean(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(sd > 0, m / (sd / np.sqrt(n)), np.where(m == 0, 0.0, np.inf))
    p: np.ndarray = 2 * _st.t.sf(np.abs(t), n - 1)
    return p


def _permutation_pvalues(D: np.ndarray, n_perm: int, rng: np.random.Generator) -> np.ndarray:
    S = rng.choice([-1.0, 1.0], size=(n_perm, D.shape[1]))
    null = np.abs(D @ S.T)
    obs = np.abs(D.sum(axis=1))
    p: np.ndarray = (1 + np.sum(null >= obs[:, None] - 1e-9, axis=1)) / (n_perm + 1)
    return p


def _wilcoxon_pvalues(D: np.ndarray) -> np.ndarray:
    out = np.ones(D.shape[0])
    for i, d in enumerate(D):
        nz = d[np.abs(d) > 1e-12]
        if len(nz):
            out[i] = _st.wilcoxon(nz, zero_method="wilcox", alternative="two-sided").pvalue
    return out


def _mcnemar_midp(Ab: np.ndarray, Bb: np.ndarray) -> np.ndarray:
    n01 = np.sum(~Ab & Bb, axis=1)
    n10 = np.sum(Ab & ~Bb, axis=1)
    nd = n01 + n10
    m = np.minimum(n01, n10)
    p = 2 * _st.binom.cdf(m, nd, 0.5) - _st.binom.pmf(m, nd, 0.5)
    return np.where(nd == 0, 1.0, np.minimum(1.0, p))


@dataclass(frozen=True)
class Type1Result:
    n: int
    sims: int
    alpha: float
    rates: dict[str, float]


def copula_null_pairs(a: Floats, b: Floats, *, n: int, sims: int,
                      rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """`sims` × `n` simulated topics of two equally effective systems, after Urbano, Lima & Hanjalic (SIGIR 2019):
    a Gaussian copula fitted to the real runs' normal scores (ranks → Φ⁻¹(rank / (N + 1)), ties averaged) keeps
    how the two runs' per-topic scores move together, and both simulated systems take run `a`'s margin (its
    empirical quantile function, linearly interpolated), so the null holds for the mean, the median and every
    other location. The margin is the empirical one rather than their fitted parametric or kernel margins."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    za = _st.norm.ppf(_st.rankdata(a) / (len(a) + 1))
    zb = _st.norm.ppf(_st.rankdata(b) / (len(b) + 1))
    rho = float(np.corrcoef(za, zb)[0, 1]) if za.std() > 0 and zb.std() > 0 else 0.0
    z1 = rng.standard_normal((sims, n))
    z2 = rho * z1 + np.sqrt(max(0.0, 1.0 - rho * rho)) * rng.standard_normal((sims, n))
    margin = np.sort(a)
    return (np.quantile(margin, _st.norm.cdf(z1)).reshape(sims, n),
            np.quantile(margin, _st.norm.cdf(z2)).reshape(sims, n))


def swap_null_pairs(a: Floats, b: Floats, *, n: int, sims: int,
                    rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """n real topics drawn without replacement, each topic's pair swapped between the systems with probability 1/2."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    idx = np.argsort(rng.random((sims, len(a))), axis=1)[:, :n]
    swap = rng.random((sims, n)) < 0.5
    return np.where(swap, b[idx], a[idx]), np.where(swap, a[idx], b[idx])


NULLS = {"copula": copula_null_pairs, "swap": swap_null_pairs}


def type1_rates(a: Floats, b: Floats, *, n: int, sims: int = 1000, alpha: float = 0.05,
                binarise_at: float = 0.5, n_perm: int = 2000, n_boot: int = 2000, seed: int = 0,
                null: str = "copula") -> Type1Result:
    """Rejection rate of every test under A/A comparisons built from two real runs' per-topic scores (`null`:
    "copula" simulates equally effective systems, "swap" swaps real topics' pairs; see the module docstring).
    McNemar runs on scores binarised at `binarise_at` (score ≥ it counts as a success)."""
    rng = _rng(seed)
    A, B = NULLS[null](a, b, n=n, sims=sims, rng=rng)
    D = A - B
    rej: dict[str, np.ndarray] = {
        "t": _t_pvalues(D) < alpha,
        "permutation": _permutation_pvalues(D, n_perm, rng) < alpha,
        "wilcoxon": _wilcoxon_pvalues(D) < alpha,
        "mcnemar": _mcnemar_midp(A >= binarise_at, B >= binarise_at) < alpha,
    }
    lo, hi = _t_bounds(D, alpha)
    rej["bootstrap-t"] = (lo > 0) | (hi < 0)  # the Student-t interval used as a test (same as t)
    W = _weights(n, n_boot, rng)
    R = D @ W.T / n
    lo, hi = _percentile_bounds(R, alpha)
    rej["bootstrap-percentile"] = (lo > 0) | (hi < 0)
    J = (D.sum(axis=1, keepdims=True) - D) / (n - 1)
    lo, hi = _bca_bounds(D.mean(axis=1), R, J, alpha)
    rej["bootstrap-bca"] = (lo > 0) | (hi < 0)
    return Type1Result(n, sims, alpha, {k: float(v.mean()) for k, v in rej.items()})


@dataclass(frozen=True)
class CoverageResult:
    n: int
    sims: int
    confidence: float
    truth: float
    coverage: dict[str, float]
    mean_width: dict[str, float]


def coverage(a: Floats, b: Floats, *, n: int, relative: bool = False, sims: int = 2000,
             confidence: float = 0.95, n_boot: int = 2000, seed: int = 0) -> CoverageResult:
    """Coverage of each interval method for the population effect of candidate `a` over baseline `b`:
    topics are drawn with replacement from the real topics (the population), the truth is the population's
    mean difference (or mean(a)/mean(b) - 1)."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    rng = _rng(seed)
    alpha = 1 - confidence
    idx = rng.integers(0, len(a), size=(sims, n))
    A, B = a[idx], b[idx]
    W = _weights(n, n_boot, rng)
    bounds: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    if not relative:
        truth = float(a.mean() - b.mean())
        D = A - B
        bounds["t"] = _t_bounds(D, alpha)
        R = D @ W.T / n
        bounds["percentile"] = _percentile_bounds(R, alpha)
        J = (D.sum(axis=1, keepdims=True) - D) / (n - 1)
        bounds["bca"] = _bca_bounds(D.mean(axis=1), R, J, alpha)
    else:
        truth = float(a.mean() / b.mean() - 1)
        ma, mb = A.mean(axis=1), B.mean(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            est = ma / mb - 1
            psi = (A - (1 + est)[:, None] * B) / mb[:, None]
            lo, hi = _t_bounds(psi, alpha)
            bounds["t"] = (est + lo, est + hi)
            RA, RB = A @ W.T / n, B @ W.T / n
            R = np.where(RB > 0, RA / RB - 1, np.nan)
            R = np.where(np.isnan(R), est[:, None], R)
            bounds["percentile"] = _percentile_bounds(R, alpha)
            SA, SB = A.sum(axis=1, keepdims=True), B.sum(axis=1, keepdims=True)
            J = (SA - A) / np.where(SB - B > 0, SB - B, np.nan) - 1
            J = np.where(np.isfinite(J), J, est[:, None])
            bounds["bca"] = _bca_bounds(est, R, J, alpha)
    cov = {k: float(np.mean((lo <= truth) & (truth <= hi))) for k, (lo, hi) in bounds.items()}
    width = {k: float(np.nanmean(hi - lo)) for k, (lo, hi) in bounds.items()}
    return CoverageResult(n, sims, confidence, truth, cov, width)


def queries_for_power(sd: float, effect: float, *, confidence: float = 0.95, power: float = 0.8) -> int:
    """Smallest n whose minimum detectable effect (`harness.stats._verdict.minimum_detectable_effect`) is at
    most `effect`: the harness's prediction of the queries a claim of that size needs."""
    if effect <= 0 or sd <= 0:
        raise ValueError("effect and sd must be positive")
    z = _st.norm.ppf(0.5 + confidence / 2) + _st.norm.ppf(power)
    n = max(2, int(np.ceil((z * sd / effect) ** 2)))
    while n > 2 and minimum_detectable_effect(sd, n - 1, confidence=confidence, power=power) <= effect:
        n -= 1
    while minimum_detectable_effect(sd, n, confidence=confidence, power=power) > effect:
        n += 1
    return n


@dataclass(frozen=True)
class PowerResult:
    effect: float
    share: float
    sd: float
    predicted_n: int
    predicted_power: float
    measured_power: float
    sims: int


def power_at_prediction(a: Floats, b: Floats, effect: float, *, share: float = 0.5,
                        sims: int = 1000, confidence: float = 0.95, seed: int = 0) -> PowerResult:
    """Plant `effect` (mean) on A/A pairs of two real runs: a random `share` of topics gains effect/share.
    The harness predicts the n for 80% power from the population SD of the planted differences; the
    measured power is the share of simulations at that n whose Student-t CI lies wholly above 0 (the `ci`
    verdict 'supported' for a claim '> 0')."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    rng = _rng(seed)
    base = np.concatenate([a - b, b - a])  # A/A: each topic's difference with either sign, mean exactly 0
    sd = float(np.sqrt(np.mean(base**2) + effect**2 * (1 - share) / share))
    n = queries_for_power(sd, effect, confidence=confidence)
    hits = 0
    done = 0
    chunk = max(1, min(sims, int(4e7 // max(n, 1))))
    while done < sims:
        m = min(chunk, sims - done)
        D = base[rng.integers(0, len(base), size=(m, n))] + (rng.random((m, n)) < share) * (effect / share)
        lo, _ = _t_bounds(D, 1 - confidence)
        hits += int(np.sum(lo > 0))
        done += m
    return PowerResult(effect, share, sd, n, 0.8, hits / sims, sims)


# ---------------------------------------------------------------- the sequential rule (harness.stats.sequential)
@dataclass(frozen=True)
class SequentialResult:
    """One simulation study of a sequential design: the rate the rule rejected (A/A: its type-I error) or
    decided, the coverage of the interval it stopped with, and the queries it used (mean; share per look)."""

    looks: tuple[int, ...]
    sims: int
    truth: float
    rejection_rate: float
    coverage: float
    mean_queries: float
    stopped_share: tuple[float, ...]
    fixed_n_rejection_rate: float


def _sequential_study(D: np.ndarray, looks: Sequence[int], confidences: Sequence[float], truth: float,
                      threshold: float) -> SequentialResult:
    """Run the RCI rule (Student-t interval at each look's confidence) over rows of paired differences D."""
    sims = D.shape[0]
    active = np.ones(sims, dtype=bool)
    covered = np.zeros(sims, dtype=bool)
    rejected = np.zeros(sims, dtype=bool)
    used = np.zeros(sims)
    stopped = []
    for k, (n, conf) in enumerate(zip(looks, confidences)):
        lo, hi = _t_bounds(D[:, :n], 1 - conf)
        decided = active & ((lo > threshold) | (hi < threshold))
        last = k == len(looks) - 1
        stop = decided | (active & last)
        covered[stop] = (lo[stop] <= truth) & (truth <= hi[stop])
        rejected |= decided
        used[stop] = n
        stopped.append(float(stop.mean()))
        active &= ~stop
    lo, hi = _t_bounds(D[:, :looks[-1]], 0.05)
    return SequentialResult(tuple(looks), sims, truth, float(rejected.mean()), float(covered.mean()),
                            float(used.mean()), tuple(stopped), float(np.mean((lo > threshold) | (hi < threshold))))


def sequential_type1(a: Floats, b: Floats, design: SequentialDesign, *, sims: int = 2000,
                     seed: int = 0, null: str = "copula") -> SequentialResult:
    """A/A comparisons of two real runs (as `type1_rates`, under the same `null`) decided by the sequential
    design's repeated intervals against 0: the rate at which any look rejects is the rule's type-I error."""
    A, B = NULLS[null](a, b, n=design.looks[-1], sims=sims, rng=_rng(seed))
    return _sequential_study(A - B, design.looks, design.confidences, 0.0, 0.0)


def sequential_coverage(a: Floats, b: Floats, design: SequentialDesign, *, sims: int = 2000,
                        seed: int = 0) -> SequentialResult:
    """Topics drawn with replacement from the real topics (the population; truth = mean(a − b)), the claim
    '> 0' decided sequentially: coverage of the interval the rule stopped with, and the queries it used."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    rng = _rng(seed)
    idx = rng.integers(0, len(a), size=(sims, design.looks[-1]))
    D = a[idx] - b[idx]
    return _sequential_study(D, design.looks, design.confidences,
                             float(np.mean(a - b)), 0.0)


def sequential_planted(a: Floats, b: Floats, design: SequentialDesign, effect: float, *, share: float = 0.5,
                       sims: int = 2000, seed: int = 0) -> SequentialResult:
    """A known `effect` planted on A/A pairs (as `power_at_prediction`: a random `share` of topics gains
    effect/share), the claim '> 0' decided sequentially: the share decided and the queries used."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    rng = _rng(seed)
    base = np.concatenate([a - b, b - a])
    n = design.looks[-1]
    D = base[rng.integers(0, len(base), size=(sims, n))] + (rng.random((sims, n)) < share) * (effect / share)
    return _sequential_study(D, design.looks, design.confidences,
                             effect, 0.0)
