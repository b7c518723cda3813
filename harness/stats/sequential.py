"""Group-sequential verdicts: a comparative claim draws its queries in looks and stops at the first look that
decides it, with error rates that hold under this optional stopping.

The rule is the repeated confidence interval (RCI) of Jennison & Turnbull (1984; *Group Sequential Methods
with Applications to Clinical Trials*, 2000, ch. 9): at look k the claim's interval is built at the nominal
level 2Φ(c_k) − 1, where c_1 … c_K are two-sided boundaries from an alpha-spending function (Lan & DeMets
1983). The K intervals cover the true effect *simultaneously* with probability ≥ 1 − α, so a verdict read from
whichever interval the claim stopped at — supported when it lies wholly on the claim's side of the threshold,
refuted when wholly on the other — keeps its error rate at α however the stopping look was chosen.

Boundaries are computed by the recursive numerical integration of Armitage, McPherson & Rowe (1969) on the
grid of Jennison & Turnbull (2000, ch. 19), taken from `gsdesign` (a port of gsDesign's C routines `gridpts`,
`h1`, `hupdate`); the tests pin them to published tables. With a t statistic the z boundary is carried over at
the same tail probability (Jennison & Turnbull 2000, §11.4): the interval at look k is simply the claim's own
interval method at confidence 2Φ(c_k) − 1.

What it costs: with O'Brien–Fleming spending and looks at 10, 20, 30 queries the boundaries are 3.71, 2.51,
1.99 (fixed-n: 1.96), so the last look's interval is 1.7% wider than a fixed-30 interval, and the first looks
decide only large effects.

The RCI guarantee rests on each look's interval holding its nominal level, which a Student-t interval does not on the
skewed, tie-heavy per-query differences of retrieval metrics (docs/statistics.md). A design with
`boundary="anytime"` instead builds every look's interval at 1 − α as a confidence sequence (the betting interval of
bounded values, `harness.stats.betting`), valid at every look simultaneously by construction: `run_sequential`
measures each look inside `anytime_intervals()` and refuses an effect whose interval is not anytime-valid.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np
from harness.stats._scipy import optimize as _opt
from harness.stats._scipy import stats as _st

from harness.stats.futility import FUTILITY_BELOW

if TYPE_CHECKING:
    from harness.config import SequentialSettings
    from harness.stats._effect import Effect
    from harness.stats._verdict import Comparator, Decision, Verdict, VerdictName

# gsdesign's continuation density at a look: (z grid points, their weights, the density h times the weights)
Grid = tuple[np.ndarray, np.ndarray, np.ndarray]

GRID_R = 18  # gsDesign's default grid size (Jennison & Turnbull's r)
SPENDING = ("obf", "pocock")
BOUNDARIES = ("rci", "anytime")


def spent(spending: str, alpha: float, t: float) -> float:
    """Cumulative two-sided α spent at information fraction t ∈ (0, 1] (Lan & DeMets 1983), each tail spending
    half, as gsDesign's `sfLDOF` / `sfLDPocock` and ldbounds do: O'Brien–Fleming type 2·(2 − 2Φ(z_{1−α/4}/√t)),
    Pocock type α·ln(1 + (e − 1)t)."""
    if not 0 < t <= 1 + 1e-12:
        raise ValueError(f"information fraction must be in (0, 1], got {t}")
    t = min(t, 1.0)
    if spending == "obf":
        return float(4 * _st.norm.sf(_st.norm.isf(alpha / 4) / math.sqrt(t)))
    if spending == "pocock":
        return float(alpha * math.log(1 + (math.e - 1) * t))
    raise ValueError(f"unknown spending function {spending!r}; expected one of {SPENDING}")


def _crossing(c: float, grid: Grid | None, info_prev: float,
              info: float) -> float:
    """P(|Z_k| ≥ c, no earlier crossing) under the null, given the continuation density of the previous look."""
    if grid is None:
        return float(2 * _st.norm.sf(c))
    z_prev, _, h_prev = grid
    delta = info - info_prev
    mean = z_prev * math.sqrt(info_prev)
    up = _st.norm.sf((c * math.sqrt(info) - mean) / math.sqrt(delta))
    down = _st.norm.cdf((-c * math.sqrt(info) - mean) / math.sqrt(delta))
    return float(np.sum(h_prev * (up + down)))


def _continue(c: float, grid: Grid | None, info_prev: float, info: float) -> Grid:
    from gsdesign import h1, hupdate

    a, b = (-c, c) if math.isfinite(c) else (-np.inf, np.inf)
    out: Grid = h1(GRID_R, 0.0, info, a, b) if grid is None else hupdate(GRID_R, 0.0, info, a, b, 0.0, info_prev, grid)
    return out


def _fractions(fractions: Sequence[float]) -> list[float]:
    t = [float(x) for x in fractions]
    if not t or any(b <= a for a, b in zip(t, t[1:])) or t[0] <= 0 or t[-1] > 1 + 1e-12:
        raise ValueError(f"information fractions must increase within (0, 1], got {list(fractions)}")
    return t


def spending_boundaries(fractions: Sequence[float], *, alpha: float = 0.05, spending: str = "obf") -> list[float]:
    """Two-sided symmetric z boundaries c_1 … c_K for looks at the given information fractions: look k spends
    spent(t_k) − spent(t_{k−1}) of α (both tails together); the last look spends what is left."""
    t = _fractions(fractions)
    out: list[float] = []
    grid, info_prev, total = None, 0.0, 0.0
    for k, tk in enumerate(t):
        target = (alpha if k == len(t) - 1 else spent(spending, alpha, tk)) - total
        if target <= 1e-15:
            c = math.inf
        else:
            c = float(_opt.brentq(lambda x, g=grid, i0=info_prev, i1=tk, a=target: _crossing(x, g, i0, i1) - a,
                                  1e-6, 40.0, xtol=1e-10))
            total += _crossing(c, grid, info_prev, tk)
        out.append(c)
        grid, info_prev = _continue(c, grid, info_prev, tk), tk
    return out


def crossing_probability(bounds: Sequence[float], fractions: Sequence[float]) -> float:
    """Null probability that |Z_k| ≥ c_k at some look (the design's two-sided type-I error)."""
    t = _fractions(fractions)
    grid, info_prev, total = None, 0.0, 0.0
    for c, tk in zip(bounds, t):
        if math.isfinite(c):
            total += _crossing(c, grid, info_prev, tk)
        grid, info_prev = _continue(c, grid, info_prev, tk), tk
    return total


def constant_shape_boundaries(k: int, *, alpha: float = 0.05, shape: str = "obf") -> list[float]:
    """The classic designs with K equally spaced looks: Pocock (1977) c_k = C, O'Brien & Fleming (1979)
    c_k = C·√(K/k), with C solved so that the crossing probability is α (Jennison & Turnbull 2000, Tables
    2.1 and 2.3)."""
    t = [(i + 1) / k for i in range(k)]
    form: Callable[[int], float] = (lambda i: 1.0) if shape == "pocock" else (lambda i: math.sqrt(k / (i + 1)))
    if shape not in SPENDING:
        raise ValueError(f"unknown boundary shape {shape!r}; expected one of {SPENDING}")
    C = _opt.brentq(lambda C: crossing_probability([C * form(i) for i in range(k)], t) - alpha, 1.0, 10.0,
                    xtol=1e-10)
    return [float(C * form(i)) for i in range(k)]


@dataclass(frozen=True)
class SequentialDesign:
    """Looks at cumulative query counts `looks` (the last is the most the claim may use), two-sided α spent
    by `spending`. `confidence_at(k)` is the nominal level of look k's repeated confidence interval."""

    looks: tuple[int, ...]
    alpha: float = 0.05
    spending: str = "obf"
    boundary: str = "rci"  # "anytime": every look's interval is a confidence sequence at 1 − alpha
    bounds: tuple[float, ...] = field(init=False)

    def __post_init__(self) -> None:
        if self.boundary not in BOUNDARIES:
            raise ValueError(f"unknown boundary {self.boundary!r}; expected one of {BOUNDARIES}")
        looks = tuple(int(n) for n in self.looks)
        if not looks or any(b <= a for a, b in zip(looks, looks[1:])) or looks[0] < 2:
            raise ValueError(f"looks must be increasing query counts of at least 2, got {list(self.looks)}")
        object.__setattr__(self, "looks", looks)
        n = looks[-1]
        object.__setattr__(self, "bounds", tuple(spending_boundaries([x / n for x in looks], alpha=self.alpha,
                                                                     spending=self.spending)))

    @classmethod
    def plan(cls, n_max: int, *, look_every: int = 10, max_looks: int = 5, alpha: float = 0.05,
             spending: str = "obf", boundary: str = "rci") -> SequentialDesign:
        """Looks every `look_every` queries up to `n_max`, at most `max_looks` of them (equally spaced then);
        a remainder smaller than half a step joins the last look."""
        if n_max < 2:
            raise ValueError(f"a sequential design needs at least 2 queries, got {n_max}")
        k = max(1, min(max_looks, n_max // max(look_every, 1)))
        looks = sorted({max(2, round(n_max * (i + 1) / k)) for i in range(k)}) if n_max > k * look_every \
            else sorted({min(n_max, look_every * (i + 1)) for i in range(k)} | {n_max})
        if len(looks) > 1 and looks[-1] - looks[-2] < look_every / 2:
            looks.pop(-2)
        return cls(tuple(looks), alpha=alpha, spending=spending, boundary=boundary)

    @classmethod
    def for_claim(cls, settings: SequentialSettings, n_max: int) -> SequentialDesign:
        """The looks `harness.sequential` (config.SequentialSettings) plans for a claim of at most `n_max` queries;
        one look at n_max when the settings disable sequential verdicts (--fixed-n)."""
        if not settings.enabled:
            return cls((n_max,), alpha=settings.alpha, spending=settings.spending)
        return cls.plan(n_max, look_every=settings.look_every, max_looks=settings.max_looks, alpha=settings.alpha,
                        spending=settings.spending, boundary=settings.boundary)

    def confidence_at(self, k: int) -> float:
        """Nominal confidence of look k's interval (0-based); 0.0 at a look that spends nothing; 1 − alpha at every
        look of an anytime design."""
        if self.boundary == "anytime":
            return 1.0 - self.alpha
        c = self.bounds[k]
        return float(1 - 2 * _st.norm.sf(c)) if math.isfinite(c) else 1.0

    @property
    def confidences(self) -> list[float]:
        """`confidence_at(k)` for every look."""
        return [self.confidence_at(k) for k in range(len(self.looks))]

    def describe(self) -> str:
        if self.boundary == "anytime":
            return (f"sequential, anytime-valid: a {1 - self.alpha:.0%} confidence sequence (betting, Waudby-Smith & "
                    f"Ramdas 2024) at every look, looks at {list(self.looks)} queries")
        name = {"obf": "O'Brien-Fleming", "pocock": "Pocock"}[self.spending]
        return (f"group-sequential, {name} alpha spending (Lan-DeMets), looks at {list(self.looks)} queries, "
                f"z boundaries {[round(c, 3) for c in self.bounds]}")

    def as_context(self) -> dict[str, Any]:
        return {"looks": list(self.looks), "alpha": self.alpha, "spending": self.spending, "boundary": self.boundary,
                "bounds": [round(c, 4) for c in self.bounds],
                "confidence": [round(c, 6) for c in self.confidences]}


def first_look(settings: SequentialSettings, n_max: int) -> int:
    """The queries a claim of at most `n_max` queries reads at its first look under `settings` (all of them with
    sequential verdicts off, or under 2): what a study its claims share draws in its set-up."""
    return SequentialDesign.for_claim(settings, n_max).looks[0] if n_max >= 2 else max(n_max, 0)


@dataclass(frozen=True)
class Look:
    """One look: queries used, the interval's nominal confidence, the effect there and the verdict it gave."""

    n: int
    confidence: float
    estimate: float
    ci: tuple[float, float]
    verdict: VerdictName


@dataclass
class SequentialOutcome:
    """Where a sequential claim stopped: its last effect (with the repeated interval) and verdict, and every look."""

    design: SequentialDesign
    effect: Effect
    verdict: Verdict
    looks: list[Look]
    available: int
    futile_probability: float | None = None  # set where the claim stopped as futile (harness.stats.futility)
    budget_reason: str | None = None  # set where the run's budget refused the claim's next look (harness.budget)

    @property
    def futile(self) -> bool:
        """Whether the claim stopped early because its last look could hardly decide it (non-binding futility)."""
        return self.futile_probability is not None

    @property
    def reported_effect(self) -> Effect:
        """What the claim reports where it stopped, decided or not (futile, or refused by the budget): its stopping
        look's effect with that look's own interval (the confidence sequence's, or the repeated interval), which
        holds its coverage at a stop the data chose; never the fixed-n interval of the queries used."""
        return self.effect

    @property
    def stopped_at(self) -> int:
        """1-based number of the look the claim stopped at."""
        return len(self.looks)

    @property
    def queries_used(self) -> int:
        return self.looks[-1].n

    def as_context(self) -> dict[str, Any]:
        stop: dict[str, Any] = {}
        if self.futile_probability is not None:
            stop = {"stopped": f"futile at look {self.stopped_at}",
                    "decision_probability": round(self.futile_probability, 4)}
        elif self.budget_reason is not None:
            stop = {"stopped": f"not decided within the budget at look {self.stopped_at}", "budget": self.budget_reason}
        return {"rule": self.design.describe(), **self.design.as_context(), "stopped_at_look": self.stopped_at,
                **stop, "queries_used": self.queries_used, "queries_available": self.available,
                "history": [{"n": lk.n, "confidence": round(lk.confidence, 6), "estimate": lk.estimate,
                             "ci": list(lk.ci), "verdict": lk.verdict} for lk in self.looks]}


# error: the arms' calls failed; more queries would only fail too
DECIDED: tuple[VerdictName, ...] = ("supported", "refuted", "error")


def run_sequential(design: SequentialDesign, effect_at: Callable[[int, float], Effect],
                   verdict_of: Callable[[Effect, bool], Verdict], *, available: int | None = None,
                   futility_threshold: float | None = None, futility_below: float = FUTILITY_BELOW,
                   may_continue: Callable[[int, int, float | None], str | None] | None = None,
                   decision_probability: Callable[..., float] | None = None) -> SequentialOutcome:
    """Look at n_1, n_2, … queries: `effect_at(n, confidence)` measures the effect on the first n queries with
    its interval at that confidence, `verdict_of(effect, final)` decides it (`final`: the last look); stop at the
    first supported, refuted or error verdict (a verdict object with a `.verdict` string), else after the last look.
    An anytime design measures each look inside `anytime_intervals()` and refuses an effect whose interval is not
    anytime-valid (its repeated 95% intervals would not hold their level).

    With `futility_threshold` (the claim's threshold, on the effect's scale), an undecided look before the last
    stops the claim when the predictive probability of a decision by the last look is under `futility_below`
    (`harness.stats.futility`): non-binding, so the verdict stays the look's own (inconclusive) and the boundaries
    are those computed without futility.

    With `may_continue(k, n, p)` (the run's budget, `harness.budget`), each look after the first is taken only where
    it returns None for look k (0-based) at n queries, p being the previous look's decision probability (None
    without `futility_threshold`); a reason stops the claim there, undecided. It chooses whether a planned look is
    taken, never its n, so an anytime-valid interval keeps its level.

    `decision_probability` stands in for `harness.stats.futility.decision_probability` (same arguments: estimate,
    interval, n, confidence, later looks, threshold): the allocator's calibration passes the values it computed for
    many claims at once (`harness.stats._allocation_claims`), proven equal to it."""
    from harness.stats._effect import ANYTIME_METHODS, anytime_intervals
    from harness.stats import futility as _futility

    avail = available if available is not None else design.looks[-1]
    looks: list[Look] = []
    effect: Effect | None = None
    verdict: Verdict | None = None
    p: float | None = None
    for k, n in enumerate(design.looks):
        if may_continue is not None and k > 0:
            reason = may_continue(k, n, p)
            if reason is not None:
                assert effect is not None and verdict is not None
                return SequentialOutcome(design, effect, verdict, looks, avail, budget_reason=reason)
        conf = design.confidence_at(k)
        if design.boundary == "anytime":
            with anytime_intervals():
                effect = effect_at(n, conf)
            if effect.interval_method not in ANYTIME_METHODS:
                raise ValueError(f"an anytime sequential design needs an anytime-valid interval ({ANYTIME_METHODS}); "
                                 f"the look at {n} measured a {effect.interval_method!r} interval (a metric without "
                                 "bounds? use harness.sequential.boundary: rci)")
        else:
            effect = effect_at(n, conf)
        verdict = verdict_of(effect, k == len(design.looks) - 1)
        looks.append(Look(n, conf, float(effect.estimate), (float(effect.ci[0]), float(effect.ci[1])), verdict.verdict))
        if verdict.verdict in DECIDED:
            break
        if futility_threshold is not None and k < len(design.looks) - 1:
            later = [(m, design.confidence_at(j)) for j, m in enumerate(design.looks) if j > k]
            predict = decision_probability or _futility.decision_probability
            p = predict(float(effect.estimate), (float(effect.ci[0]), float(effect.ci[1])), n, conf, later,
                        futility_threshold)
            if _futility.is_futile(p, futility_below):
                return SequentialOutcome(design, effect, _futility.futile_verdict(verdict), looks, avail,
                                         futile_probability=p)
    assert effect is not None and verdict is not None  # a design has at least one look
    return SequentialOutcome(design, effect, verdict, looks, avail)


def decide_in_looks(design: SequentialDesign, effect_at: Callable[[int, float], Effect], *, comparator: Comparator,
                    threshold: float, decision: Decision, min_n: int | None, settings: SequentialSettings,
                    available: int | None = None, context: Callable[[], dict[str, Any]] = dict,
                    may_continue: Callable[[int, int, float | None], str | None] | None = None) -> SequentialOutcome:
    """A catalogue claim (its comparator, threshold, decision rule and min_n) decided in looks as
    `rag_check_sequential` decides it: `run_sequential` with each look's verdict from `decide` (an interim look as
    such, the fallback and error rates from `context()`, the last look's context) held below `min_n`, and
    non-binding futility per `settings`. One function for the plugin and for a replay of a recorded claim
    (`harness.recorded`)."""
    from harness.stats._verdict import below_min_n, decide

    def verdict_of(e: Effect, final_look: bool) -> Verdict:
        ctx = context()
        return below_min_n(decide(e, comparator, threshold, decision, fallback_rate=ctx.get("fallback_rate"),
                                  error_rate=ctx.get("error_rate"), interim=not final_look), e.n, min_n)

    return run_sequential(design, effect_at, verdict_of, available=available,
                          futility_threshold=float(threshold) if settings.futility > 0 else None,
                          futility_below=settings.futility, may_continue=may_continue)


def replay(candidate: Sequence[float], baseline: Sequence[float], design: SequentialDesign, comparator: Comparator,
           threshold: float, decision: Decision, *, relative: bool = False, binary: bool = False,
           bounds: tuple[float, float] | None = (0.0, 1.0)) -> SequentialOutcome:
    """The sequential rule run over recorded per-query scores (first n at look n), e.g. a fixed-n run's, to see
    what it would have decided and where it would have stopped."""
    from harness.stats._effect import paired_effect
    from harness.stats._verdict import decide

    c, b = np.asarray(candidate, float), np.asarray(baseline, float)

    def effect_at(n: int, confidence: float) -> Effect:
        return paired_effect(c[:n], b[:n], relative=relative, binary=binary, bounds=bounds, seed=1,
                             confidence=confidence)

    return run_sequential(design, effect_at, lambda e, final: decide(e, comparator, threshold, decision,
                                                                     interim=not final), available=len(c))


def against_fixed_n(candidate: Sequence[float], baseline: Sequence[float], design: SequentialDesign, comparator: Comparator,
                    threshold: float, decision: Decision, **kw: Any) -> dict[str, Any]:
    """What the sequential rule and the fixed-n rule (one 95% interval on every query) decide on the same recorded
    scores: both verdicts, the look the sequential rule stopped at, and whether they agree where both decided
    (None when either is undecided)."""
    from harness.stats._effect import paired_effect
    from harness.stats._verdict import decide

    seq = replay(candidate, baseline, design, comparator, threshold, decision, **kw)
    c, b = np.asarray(candidate, float), np.asarray(baseline, float)
    fixed = decide(paired_effect(c, b, seed=1, confidence=1 - design.alpha, **kw), comparator, threshold, decision)
    both = fixed.verdict in DECIDED and seq.verdict.verdict in DECIDED
    return {"fixed_n": fixed.verdict, "sequential": seq.verdict.verdict, "stopped_at_look": seq.stopped_at,
            "queries_used": seq.queries_used, "queries": len(c),
            "agree": (fixed.verdict == seq.verdict.verdict) if both else None}
