"""Calibration of the run's wall-time budget (issue #37, `harness.budget`) through the production path: whole runs of
claims drawn from real per-query scores (`harness.stats.calibration_sides` tilts a population's truth to where it is
asked), each claim decided by `run_sequential` on the default anytime design with futility, as `rag_check_sequential`
wires it, its looks paid for on a fake clock at real per-query costs. Three allocations of the same claims on the same
data: no budget; the allocator (`harness.budget.Allocator`: claims in catalogue order, each admitted at its book cost
and asking before each later look, the claims still waiting planned); round-robin (each claim's next look in turn,
while its step fits what is left; the same fit rule, no reservation, no value order).

A third of a run's claims have their truth at the threshold (a supported and a refuted verdict are both errors,
counted apart), a third one 30-query MDE either side of it (the right verdict is power), a third `FAR_MDES` MDEs either
side. The budget is `BUDGET_SHARE` of what the run spends without one. Claim-level figures (per-side error, coverage,
power) are read over the claims a budgeted run started; run-level ones (claims decided, overrun) over runs
(`harness.stats.allocation_figures`).
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from harness.budget import PRIOR_P_DECIDE, Allocator, Unit
from harness.stats import _allocation_claims as ac
from harness.stats import calibration_sides as sides
from harness.stats._effect import Effect
from harness.stats._verdict import Verdict
from harness.stats.futility import FUTILITY_BELOW
from harness.stats.sequential import SequentialDesign, SequentialOutcome, run_sequential

CATEGORIES = ("threshold", "one MDE", "far")
FAR_MDES = 3.0
PER_CATEGORY = 14  # claims per run in each third (the MDE and far thirds half on each side): 42 claims a run
BUDGET_SHARE = 0.5
N_MAX = 30
# the run's pace (harness.plugin.budget, which the statistics layer does not import; tests pin them equal): once
# this many book seconds of claims have run, every book cost is scaled by actual over book seconds, within the range
SCALE_AFTER_S = 20.0
SCALE_RANGE = (0.25, 4.0)
# outcome codes of a claim in one allocation
INCONCLUSIVE, SUPPORTED, REFUTED, BUDGET, NOT_STARTED = 0, 1, 2, 3, 4
_VERDICTS = {name: Verdict(name, "") for name in ac.VERDICT_NAMES}  # type: ignore[arg-type]


@dataclass(frozen=True)
class CostProfile:
    """A real claim's cost: its test's seconds as last measured (the allocator's book) over the queries it drew."""

    nodeid: str
    book_s: float
    queries: int

    @property
    def per_query(self) -> float:
        return self.book_s / self.queries


def cost_profiles(book_tests: Mapping[str, float], queries_used: Mapping[str, int]) -> list[CostProfile]:
    """The profiles of the claims whose queries are known, from a cost book's test seconds."""
    return [CostProfile(nid, float(book_tests[nid]), int(q)) for nid, q in queries_used.items()]


@dataclass(frozen=True)
class Claims:
    """Every claim of every run, run r's in catalogue order at rows r·per_run … (r + 1)·per_run − 1."""

    runs: int
    per_run: int
    population: np.ndarray  # index into the study's populations
    category: np.ndarray  # index into CATEGORIES
    side: np.ndarray  # +1 the claim's side of the threshold, −1 the other, 0 at it
    truth: np.ndarray
    book_s: np.ndarray  # the cost the allocator plans with (the profile's test seconds)
    cum_cost: np.ndarray  # (claims, N_MAX + 1): true seconds of the first n queries
    A: np.ndarray
    B: np.ndarray  # nan rows for a rate

    def rows(self, r: int) -> range:
        return range(r * self.per_run, (r + 1) * self.per_run)


def _cells(pops: Sequence[tuple[sides.Population, str, float]]) -> dict[tuple[int, int], list[tuple[int, float]]]:
    """(category, side) -> the populations whose values reach that truth, with the truth."""
    out: dict[tuple[int, int], list[tuple[int, float]]] = {}
    for c, mdes in enumerate((0.0, 1.0, FAR_MDES)):
        for s in ((0,) if c == 0 else (1, -1)):
            for j, (pop, _, thr) in enumerate(pops):
                truth = thr + s * mdes * sides.mde(pop, thr, N_MAX)
                try:
                    sides.truth_weights(pop, truth)
                except ValueError:  # beyond what the population's values can reach
                    continue
                out.setdefault((c, s), []).append((j, truth))
    return out


def draw_claims(pops: Sequence[tuple[sides.Population, str, float]], profiles: Sequence[CostProfile], runs: int,
                seed: int, *, jitter: float) -> Claims:
    """`runs` runs of 3·PER_CATEGORY claims in a random catalogue order, each of a random reachable population and
    a random real cost profile, its queries drawn from the population tilted to its truth; a query's seconds are its
    profile's mean times a mean-one log-normal of log-SD `jitter`."""
    rng = np.random.default_rng(seed)
    cells = _cells(pops)
    half = PER_CATEGORY // 2
    kinds = [(0, 0)] * PER_CATEGORY + [(1, 1)] * half + [(1, -1)] * half + [(2, 1)] * half + [(2, -1)] * half
    per_run = len(kinds)
    n = runs * per_run
    cat, side, pop, truth = (np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64),
                             np.zeros(n))
    for r in range(runs):
        order = rng.permutation(per_run)
        for slot, (c, s) in zip(range(r * per_run, (r + 1) * per_run), (kinds[i] for i in order)):
            j, t = cells[(c, s)][rng.integers(len(cells[(c, s)]))]
            cat[slot], side[slot], pop[slot], truth[slot] = c, s, j, t
    A, B = np.zeros((n, N_MAX)), np.full((n, N_MAX), np.nan)
    for key in sorted({(int(p), float(t)) for p, t in zip(pop, truth)}):
        idx = np.flatnonzero((pop == key[0]) & (truth == key[1]))
        a, b = sides.draw(pops[key[0]][0], key[1], N_MAX, len(idx), rng)
        A[idx] = a
        if b is not None:
            B[idx] = b
    prof = rng.integers(len(profiles), size=n)
    per_q = np.array([p.per_query for p in profiles])[prof]
    secs = per_q[:, None] * np.exp(jitter * rng.standard_normal((n, N_MAX)) - jitter ** 2 / 2)
    cum = np.concatenate([np.zeros((n, 1)), np.cumsum(secs, axis=1)], axis=1)
    return Claims(runs, per_run, pop, cat, side, truth, np.array([p.book_s for p in profiles])[prof], cum, A, B)


def all_looks(claims: Claims, pops: Sequence[tuple[sides.Population, str, float]], rule: ac.ClaimRule,
              below: float = FUTILITY_BELOW) -> ac.ClaimLooks:
    """Every look of every claim under `rule`, population by population, in the claims' order."""
    n, K = len(claims.population), len(rule.looks)
    arrays = {f: (np.zeros((n, K), dtype=np.int8) if f == "verdict" else np.full((n, K), np.nan))
              for f in ("estimate", "lo", "hi", "verdict", "p", "fixed_lo", "fixed_hi")}
    for j, (pop, comparator, thr) in enumerate(pops):
        idx = np.flatnonzero(claims.population == j)
        if len(idx):
            part = ac.claim_looks(pop, comparator, thr, claims.A[idx], None if pop.baseline is None else claims.B[idx],
                                  rule, below=below)
            for f, arr in arrays.items():
                arr[idx] = getattr(part, f)
    return ac.ClaimLooks(rule, **arrays)


def budgeted_rule() -> ac.ClaimRule:
    """How a claim is decided while the allocator spends the budget: the anytime design's looks, as without one."""
    return ac.ANYTIME


@dataclass
class Allocation:
    """One allocation of every claim: outcome code, looks taken, reported interval; per run the seconds spent."""

    name: str
    code: np.ndarray
    looks: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    spent: np.ndarray
    limit: np.ndarray

    @classmethod
    def empty(cls, name: str, claims: Claims) -> "Allocation":
        n = len(claims.population)
        return cls(name, np.full(n, NOT_STARTED, dtype=np.int8), np.zeros(n, dtype=np.int64), np.full(n, np.nan),
                   np.full(n, np.nan), np.zeros(claims.runs), np.full(claims.runs, np.inf))

    @property
    def started(self) -> np.ndarray:
        return np.asarray(self.code != NOT_STARTED)

    @property
    def decided(self) -> np.ndarray:
        return np.isin(self.code, (SUPPORTED, REFUTED))


@dataclass
class _Clock:
    t: float = 0.0

    def __call__(self) -> float:
        return self.t


@dataclass
class _Claim:
    """One claim served to `run_sequential` from its precomputed looks; each look's true cost is paid on `clock`."""

    i: int
    claims: Claims
    looks: ac.ClaimLooks
    kind: str
    clock: _Clock
    drawn: list[float] = field(default_factory=lambda: [0, 0.0])  # queries measured, their seconds

    def k_of(self, n: int) -> int:
        return self.looks.rule.looks.index(n)

    def effect_at(self, n: int, confidence: float) -> Effect:
        k, i = self.k_of(n), self.i
        cost = float(self.claims.cum_cost[i, n] - self.claims.cum_cost[i, int(self.drawn[0])])
        self.clock.t += cost
        self.drawn[0], self.drawn[1] = n, self.drawn[1] + cost
        return Effect(self.kind, float(self.looks.estimate[i, k]), (float(self.looks.lo[i, k]),
                      float(self.looks.hi[i, k])), n, self.looks.fixed_sd(i, k), confidence=confidence,
                      interval_method=self.looks.rule.interval_method)

    def verdict_of(self, e: Effect, final: bool) -> Verdict:
        return _VERDICTS[ac.VERDICT_NAMES[int(self.looks.verdict[self.i, self.k_of(e.n)])]]

    def probability(self, estimate: float, ci: tuple[float, float], n: int, confidence: float, later: Any,
                    threshold: float) -> float:
        return float(self.looks.p[self.i, self.k_of(n)])

    def run(self, design: SequentialDesign, threshold: float, below: float,
            may_continue: Callable[[int, int, float | None], str | None] | None = None) -> SequentialOutcome:
        return run_sequential(design, self.effect_at, self.verdict_of, available=N_MAX,
                              futility_threshold=threshold if self.looks.rule.futility else None,
                              futility_below=below, may_continue=may_continue, decision_probability=self.probability)


def design_of(rule: ac.ClaimRule) -> SequentialDesign:
    """The sequential design a rule's looks make (the anytime rule's is `SequentialDesign.for_claim`'s default)."""
    return _design(rule.looks, "anytime" if rule.interval_method == "betting" else "rci")


@functools.lru_cache(maxsize=8)
def _design(looks: tuple[int, ...], boundary: str) -> SequentialDesign:
    return SequentialDesign(looks, boundary=boundary)


def _scheduled(looks: int, why: str) -> Callable[[int, int, float | None], str | None]:
    """A `may_continue` that grants the first `looks` looks and refuses the next with `why`."""
    def may_continue(k: int, n: int, p: float | None) -> str | None:
        return None if k < looks else why or "not scheduled"
    return may_continue


def _record(out: Allocation, i: int, o: SequentialOutcome) -> None:
    v = o.verdict.verdict
    out.code[i] = BUDGET if o.budget_reason is not None else SUPPORTED if v == "supported" else \
        REFUTED if v == "refuted" else INCONCLUSIVE
    out.looks[i] = len(o.looks)
    out.lo[i], out.hi[i] = (float(x) for x in o.reported_effect.ci)  # what production reports (rag_check_sequential)


class Study:
    """The three allocations of `claims`, run by run: with the estimates production makes (a claim's book cost at
    admission, its measured seconds per query since), or, `true_costs`, with each step's true cost. `looks`: the
    claims' anytime looks where already computed (default: `all_looks`)."""

    def __init__(self, claims: Claims, pops: Sequence[tuple[sides.Population, str, float]], *,
                 true_costs: bool = False, below: float = FUTILITY_BELOW, budget_share: float = BUDGET_SHARE,
                 looks: ac.ClaimLooks | None = None) -> None:
        self.claims, self.pops, self.below, self.share = claims, pops, below, budget_share
        self.true_costs = true_costs  # the allocations' estimates are each step's true cost (else: as production)
        self.looks = looks if looks is not None else all_looks(claims, pops, ac.ANYTIME, below)
        rule = budgeted_rule()
        self.budget_looks = self.looks if rule == ac.ANYTIME else all_looks(claims, pops, rule, below)
        self.none, self.allocator, self.round_robin = (Allocation.empty(n, claims) for n in
                                                       ("no budget", "allocator", "round-robin"))
        for r in range(claims.runs):
            self._run(r)

    def _claim(self, i: int, looks: ac.ClaimLooks, clock: _Clock) -> _Claim:
        pop = self.pops[int(self.claims.population[i])][0]
        return _Claim(i, self.claims, looks, "proportion" if pop.kind == "proportion" else "difference", clock)

    def _book(self, i: int) -> float:
        """What a claim is planned and admitted at: its book cost, or its true cost to where it stops unbudgeted."""
        if self.true_costs:
            n = ac.ANYTIME.looks[int(self.none.looks[i]) - 1]
            return float(self.claims.cum_cost[i, n])
        return float(self.claims.book_s[i])

    def _threshold(self, i: int) -> float:
        return float(self.pops[int(self.claims.population[i])][2])

    def _run(self, r: int) -> None:
        rows = self.claims.rows(r)
        clock, design = _Clock(), design_of(ac.ANYTIME)
        for i in rows:  # no budget
            o = self._claim(i, self.looks, clock).run(design, self._threshold(i), self.below)
            _record(self.none, i, o)
        limit = self.share * clock.t
        self.none.spent[r] = clock.t
        self._allocate(r, rows, limit)
        self._round_robin(r, rows, limit)

    def _allocate(self, r: int, rows: range, limit: float) -> None:
        """Claims in catalogue order, each admitted as `harness.plugin.budget.BudgetHooks` admits a test (the claims
        not yet started planned again at their book cost times the run's pace, then this one asked for at its own),
        each later look asked for as `rag_check_sequential` asks (`BudgetHooks.look`); after each claim the pace
        (actual over book seconds of the claims run, once `SCALE_AFTER_S` of them have run, within `SCALE_RANGE`) is
        updated as `BudgetHooks.pytest_runtest_logreport` updates it. With `true_costs` the pace stays 1."""
        clock, looks = _Clock(), self.budget_looks
        design = design_of(looks.rule)
        alloc = Allocator(limit, clock=clock)
        cum = self.claims.cum_cost
        scale, pace = 1.0, [0.0, 0.0]
        for i in rows:
            alloc.plan((Unit(str(j), scale * self._book(j), PRIOR_P_DECIDE) for j in rows if j > i), replace=True)
            if alloc.request(str(i), scale * self._book(i), p_decide=PRIOR_P_DECIDE) is not None:
                continue
            c = self._claim(i, looks, clock)

            def may_continue(k: int, n: int, p: float | None, c: _Claim = c, i: int = i) -> str | None:
                done, last = int(c.drawn[0]), design.looks[-1]
                if self.true_costs:
                    step, to_end = cum[i, n] - cum[i, done], cum[i, last] - cum[i, done]
                else:
                    per_query = c.drawn[1] / max(done, 1)
                    step, to_end = per_query * (n - done), per_query * (last - done)
                pd = p if p is not None and math.isfinite(p) else PRIOR_P_DECIDE
                return alloc.request(str(i), float(step), to_end_s=float(to_end), p_decide=pd)

            t0 = clock.t
            _record(self.allocator, i, c.run(design, self._threshold(i), self.below, may_continue))
            if not self.true_costs:
                pace[0] += self._book(i)
                pace[1] += clock.t - t0
                if pace[0] >= SCALE_AFTER_S:
                    scale = min(max(pace[1] / pace[0], SCALE_RANGE[0]), SCALE_RANGE[1])
        self.allocator.spent[r], self.allocator.limit[r] = clock.t, limit

    def _round_robin(self, r: int, rows: range, limit: float) -> None:
        """Round k: every claim still going takes its k-th look in catalogue order where the step fits what is left
        (the allocator's fit rule with nothing planned: no reservation); a claim goes on as it would without a
        budget. Then each claim is replayed through `run_sequential`, stopped where its look was refused."""
        clock = _Clock()
        alloc = Allocator(limit, clock=clock)
        ns = ac.ANYTIME.looks
        taken = {i: 0 for i in rows}
        why: dict[int, str] = {}
        for k in range(len(ns)):
            for i in rows:
                if i in why or self.none.looks[i] <= k:
                    continue
                prev = ns[k - 1] if k else 0
                cum = self.claims.cum_cost[i]
                step = self._book(i) if k == 0 else float(cum[ns[k]] - cum[prev]) if self.true_costs else \
                    float(cum[prev]) / prev * (ns[k] - prev)
                reason = alloc.request(str(i), step)
                if reason is not None:
                    why[i] = reason
                    continue
                clock.t += float(self.claims.cum_cost[i, ns[k]] - self.claims.cum_cost[i, prev])
                taken[i] = k + 1
        design = design_of(ac.ANYTIME)
        for i in rows:
            if taken[i] == 0:
                continue
            o = self._claim(i, self.looks, _Clock()).run(design, self._threshold(i), self.below,
                                                         _scheduled(taken[i], why.get(i, "")))
            if len(o.looks) != taken[i]:
                raise AssertionError(f"claim {i}: round-robin scheduled {taken[i]} looks, run_sequential took "
                                     f"{len(o.looks)}")
            _record(self.round_robin, i, o)
        self.round_robin.spent[r], self.round_robin.limit[r] = clock.t, limit
