"""One wall-time budget shared by the claims of a run (`--budget`), and the rule that spends it.

A claim (one test) is admitted, and each later look of a sequential claim is granted, only where the plan for
what is left of the budget takes it: the claims still waiting and this step, picked greedily by weighted decisions
expected per second of cost (the knapsack's greedy rule; a study that serves several claims is costed once and
worth all of them). A claim's worth is the probability that it ends decided (futility's predictive probability
between looks, else what its last run here says) times what its decision is worth: a comparative claim's verdict
(supported or refuted) the setting `harness.budget.comparative_weight` times a point check's (pass or fail). The
allocator decides only *whether* a claim takes its next planned look, never at what n: the looks are the claim's
own, so its per-side error and coverage hold under any allocation (an anytime-valid interval holds at any stopping
time). A claim it refuses reads "not decided within the budget", with its last interval where it had one.

Costs come from the run's own timing: each fixture a test needs and has not yet set up, plus the test's own phases,
as last measured (`CostBook`: `<cache_dir>/budget/costs-<model>.json`, else the packaged prior measured on the reference
machine). Pure logic: the pytest side is `harness.plugin.budget`.
"""
from __future__ import annotations

import json
import math
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

__all__ = ["Allocator", "CostBook", "NotWithinBudget", "Unit", "book_from_results", "fixture_of", "needed_of",
           "parse_budget", "plan_within", "plan_order", "PRIOR_P_DECIDE", "MEASURE_P_DECIDE"]

PRIOR_P_DECIDE = 0.5  # a claim never run here: as likely decided as not
MEASURE_P_DECIDE = 0.0  # a test bound to no claim (a measurement) decides none: it runs on what the claims leave
# a step is granted only where 1.15 times its estimate fits: estimates are last run's, not this one's. It covers an
# estimate up to 15% low, not the spread of one look's queries: with per-query seconds spread as the reference
# machine's LLM calls are (log-SD 0.97), 3.5% of 2,000 simulated runs overran, by up to 6.2% of the budget, never with
# each step's true cost (CALIB-ALLOCATOR-NO-OVERRUN, docs/benchmarks/2026-11-26-allocator-calibration.md). Once
# spent, every later step is refused: a run ends at most one step past its budget.
SAFETY = 1.15
# a cost figure with more than this share of its model calls answered from the response cache or replayed is not
# what the work costs (`CostBook.cached`): a replayed study's is all of them, a fresh run's incidental hits a few
CACHED_SHARE = 0.1
_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0}


def fixture_of(key: str) -> str:
    """The fixture a set-up's key names: `rag_dense_store` of `rag_dense_store[rag_dataset_name=cranfield]` (one
    instance of a fixture that depends on a parametrised one)."""
    return key.split("[", 1)[0]


class NotWithinBudget(RuntimeError):
    """A claim (or its next look) does not fit what is left of the run's wall-time budget. `needed`: the queries
    it needs where known (`{"queries", "why"}`): for a claim refused before its first look, what the last run that
    measured it says (`CostBook.needed`); for one `started` (a study's rest refused), the queries the study it
    reads would draw."""

    def __init__(self, message: str, needed: Mapping[str, Any] | None = None, *, started: bool = False):
        super().__init__(message)
        self.needed = dict(needed) if needed else None
        self.started = started


def parse_budget(text: str | None) -> float | None:
    """`--budget` in seconds: `15m`, `90s`, `1.5h`, a bare number of minutes; `none` (or unset) for no budget."""
    if text is None or text.strip().lower() in ("none", "off", ""):
        return None
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smh]?)\s*", text.lower())
    if not m or float(m.group(1)) <= 0:
        raise ValueError(f"--budget must be a positive time such as 15m, 900s or 1.5h, or none; got {text!r}")
    return float(m.group(1)) * _UNITS[m.group(2) or "m"]


@dataclass(frozen=True)
class Unit:
    """A claim's next step (a test, or a sequential claim's next look): its own seconds, the probability it ends
    decided, the shared set-ups it needs that are not yet done (a study, an index: their seconds are the
    allocator's `fixture_s`), the seconds to the claim's last look where its worth should be read over more than
    this step, and what its decision is worth (`weight`: a comparative claim's `harness.budget.comparative_weight`,
    a point check's 1)."""

    key: str
    cost_s: float
    p_decide: float = PRIOR_P_DECIDE
    fixtures: frozenset[str] = frozenset()
    to_end_s: float | None = None
    weight: float = 1.0

    @property
    def worth(self) -> float:
        """Decisions expected, each at its weight."""
        return self.weight * self.p_decide

    @property
    def value(self) -> float:
        """Weighted decisions expected per second of what it still costs (set-ups apart)."""
        return self.worth / max(self.to_end_s if self.to_end_s is not None else self.cost_s, 1e-3)


def plan_within(units: Sequence[Unit], fixture_s: Mapping[str, float], capacity_s: float, *,
                shared_s: float = 5.0) -> list[str]:
    """The steps a budget of `capacity_s` seconds takes, chosen greedily by weighted decisions expected per second: a
    candidate is one unit, or the units that need one shared set-up of `shared_s` seconds or more (all of them; those
    that need no other such set-up; and of those, the ones worth most per second of their own that together give the
    set-up its best worth per second: a study serves several claims, so its worth is theirs together and its cost is
    counted once, and a dear, unlikely claim among them does not drag the study's rate down with it); each pick's
    set-ups are then done for the rest, whose claims are weighed again on their own. Ties go to the earlier
    candidate. Keys in the order picked."""
    todo = {u.key: u for u in units}
    if not any(u.fixtures for u in todo.values()):
        return _plan_alone(list(todo.values()), capacity_s)
    return _plan_greedy(todo, fixture_s, capacity_s, shared_s)


def _plan_alone(units: list[Unit], capacity_s: float) -> list[str]:
    """`plan_within` where no unit needs a set-up, in one pass: each pick is the unit of the highest value (worth
    per second) that still fits (ties to the earlier), and what is left only shrinks, so a unit that does not fit
    when its turn in value order comes never fits later."""
    values = [u.value for u in units]
    if any(math.isnan(v) for v in values):  # no order to sort by: the general rule
        return _plan_greedy({u.key: u for u in units}, {}, capacity_s, 0.0)
    chosen: list[str] = []
    left = capacity_s
    for i in sorted(range(len(units)), key=lambda i: -values[i]):  # stable: ties keep their order
        cost = units[i].cost_s
        if cost <= left:
            chosen.append(units[i].key)
            left -= cost
    return chosen


def _plan_greedy(todo: dict[str, Unit], fixture_s: Mapping[str, float], capacity_s: float,
                 shared_s: float) -> list[str]:
    """`plan_within`'s rule step by step, every candidate weighed again after each pick (it consumes `todo`)."""
    chosen: list[str] = []
    have: set[str] = set()
    left = capacity_s
    while todo:
        candidates = [[u] for u in todo.values()]
        shared = {f for u in todo.values() for f in u.fixtures if f not in have and fixture_s.get(f, 0.0) >= shared_s}
        for f in sorted(shared):  # every user of a shared set-up, and those of them that need no other
            users = [u for u in todo.values() if f in u.fixtures]
            alone = [u for u in users if not (u.fixtures - have - {f}) & shared]
            candidates += [users] + ([alone] if alone and len(alone) < len(users) else [])
            core = _best_core(alone, have, fixture_s)
            if 0 < len(core) < len(alone):
                candidates.append(core)
        best: tuple[float, list[Unit], set[str], float] | None = None
        for group in candidates:
            cost, setups = _group_cost(group, have, fixture_s)
            if cost > left:
                continue
            value = (sum(u.worth for u in group) / max(cost, 1e-3) if len(group) > 1 or setups
                     else group[0].value)
            if best is None or value > best[0]:
                best = (value, group, setups, cost)
        if best is None:
            break
        for u in best[1]:
            chosen.append(u.key)
            del todo[u.key]
        have |= best[2]
        left -= best[3]
    return chosen


def _group_cost(group: Sequence[Unit], have: set[str], fixture_s: Mapping[str, float]) -> tuple[float, set[str]]:
    """The seconds a group of units still costs (their own, and each set-up they need that is not done, once) and
    those set-ups."""
    setups = set().union(*(u.fixtures for u in group)) - have
    return sum(u.cost_s for u in group) + sum(fixture_s.get(f, 0.0) for f in setups), setups


def _best_core(users: Sequence[Unit], have: set[str], fixture_s: Mapping[str, float]) -> list[Unit]:
    """Of units that share a set-up, the leading ones by worth per second of their own (what each adds once the
    set-ups they all need are paid) whose group is worth most per second, those set-ups counted once; ties to the
    fewer. Empty where none is worth anything."""
    common = frozenset.intersection(*(u.fixtures for u in users)) if users else frozenset()

    def own_rate(u: Unit) -> float:
        return u.worth / max(u.cost_s + sum(fixture_s.get(f, 0.0) for f in u.fixtures - have - common), 1e-3)

    ranked = sorted(users, key=lambda u: -own_rate(u))  # stable: ties keep their order
    best = (0.0, 0)
    for j in range(1, len(ranked) + 1):
        cost, _ = _group_cost(ranked[:j], have, fixture_s)
        rate = sum(u.worth for u in ranked[:j]) / max(cost, 1e-3)
        if rate > best[0]:
            best = (rate, j)
    return ranked[:best[1]]


def plan_order(links: Sequence[Iterable[str]], rank: Sequence[float | None]) -> list[int]:
    """The run order of a collection under a budget: the claims the plan takes first, in the order it picks them,
    so that a run whose estimates were short loses the claims worth least. Items that share a link (a module, an
    instance of a parametrised wider fixture) move together, in their own order, so no set-up runs twice. An
    item's `rank` is its place in the plan (`math.inf` where the plan does not take it; None: not budgeted); a
    group of unbudgeted items keeps its place at the front. Returns the indices in run order."""
    parent = list(range(len(links)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    first: dict[str, int] = {}
    for i, keys in enumerate(links):
        for k in keys:
            if k in first:
                parent[root(i)] = root(first[k])
            else:
                first[k] = i
    groups: dict[int, list[int]] = {}
    for i in range(len(links)):
        groups.setdefault(root(i), []).append(i)
    def key(members: list[int]) -> tuple[float, int]:
        budgeted = [r for r in (rank[i] for i in members) if r is not None]
        return (min(budgeted) if budgeted else -math.inf, members[0])

    return [i for members in sorted(groups.values(), key=key) for i in members]


@dataclass
class Allocator:
    """The run's budget and its ledger: who was admitted, who was refused and why, the seconds spent."""

    limit_s: float | None
    clock: Callable[[], float] = time.monotonic
    safety: float = SAFETY
    fixture_s: dict[str, float] = field(default_factory=dict)  # seconds of each shared set-up, as last measured
    started_at: float = field(init=False)
    waiting: dict[str, Unit] = field(default_factory=dict)
    granted: list[dict[str, Any]] = field(default_factory=list)
    refused: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.started_at = self.clock()

    def elapsed(self) -> float:
        return self.clock() - self.started_at

    def remaining(self) -> float:
        return math.inf if self.limit_s is None else self.limit_s - self.elapsed()

    def plan(self, units: Iterable[Unit], *, replace: bool = False) -> None:
        """The claims this run may still start, each waiting until its first grant or refusal (`replace`: these
        and no others, their costs as things stand now)."""
        if replace:
            self.waiting = {}
        for u in units:
            self.waiting[u.key] = u

    def picks(self, *steps: Unit) -> list[str]:
        """What the plan for the budget left takes of `steps` and the claims still waiting (each estimate times
        `safety`), in the order it picks them."""
        return plan_within([*steps, *self.waiting.values()], self.fixture_s, self.remaining() / self.safety)

    def request(self, key: str, step_s: float, *, to_end_s: float | None = None, p_decide: float = PRIOR_P_DECIDE,
                fixtures: Iterable[str] = (), free_s: float = 0.0, weight: float = 1.0) -> str | None:
        """`ask` for the step `Unit(key, step_s, p_decide, fixtures, to_end_s, weight)`."""
        return self.ask(Unit(key, step_s, p_decide, frozenset(fixtures), to_end_s, weight), free_s=free_s)

    def ask(self, mine: Unit, *, free_s: float = 0.0) -> str | None:
        """Ask for the step `mine` (a test, or a later look: its seconds, the set-ups it needs, what its decision is
        worth): None where granted, else the reason it is refused. It is granted where the plan for the budget left
        (`plan_within` over this step and every claim still waiting, each step's estimate times `safety`) takes it:
        a claim worth less waits behind those worth more and is refused where they leave too little. A step with
        nothing to set up whose estimate is at most `free_s` reads what was paid for: granted whatever is left."""
        key, step_s = mine.key, mine.cost_s
        self.waiting.pop(key, None)
        if self.limit_s is None:
            return None
        if (not mine.fixtures and step_s * self.safety <= free_s) or key in self.picks(mine):
            self.granted.append({"key": key, "step_s": round(step_s, 3), "at_s": round(self.elapsed(), 3)})
            return None
        need = (step_s + sum(self.fixture_s.get(f, 0.0) for f in mine.fixtures)) * self.safety
        why = (f"not decided within the budget: its next step needs ~{need:.0f} s, {max(self.remaining(), 0):.0f} s "
               f"of the {self.limit_s:.0f} s budget are left")
        if need <= self.remaining():
            why += ", kept for claims worth more"
        self.refused[key] = why
        return why

    def summary(self) -> dict[str, Any]:
        return {"limit_s": self.limit_s, "spent_s": round(self.elapsed(), 3), "steps_granted": len(self.granted),
                "refused": dict(self.refused)}


@dataclass
class CostBook:
    """Seconds per fixture setup and per test phase, as last measured: what a test will cost before it runs.

    A fixture's figures are kept per instance (`rag_dense_store[rag_dataset_name=cranfield]`: a dataset's index
    per dataset) and, under the fixture's own name, averaged over its instances: an instance no run has measured
    (a dataset new to this project) is read at that average."""

    fixtures: dict[str, float] = field(default_factory=dict)  # wider-scoped fixture (or instance) -> seconds of one setup
    tests: dict[str, float] = field(default_factory=dict)  # nodeid -> its own setup, call and teardown seconds
    decided: dict[str, bool] = field(default_factory=dict)  # nodeid -> whether it ended decided last time
    source: str = ""
    # wider-scoped fixture (or instance) -> model calls (cache hits included) of one set-up: 0 for an index, which
    # the model's pace does not slow; a fixture missing here is read as calling the model
    fixture_calls: dict[str, int] = field(default_factory=dict)
    # nodeid -> the queries the claim needs, as the last run that measured it says: {"queries": n or "never",
    # "why": ...}; what a claim the budget never started reads in its row
    needed: dict[str, dict[str, Any]] = field(default_factory=dict)
    # this model's pace over the packaged book's, as a pace probe measured it (harness.plugin.budget): the packaged
    # figures are read at this pace; None where no probe has measured it
    pace_vs_prior: float | None = None
    # fixture (or instance) or nodeid -> the share of its figure's calls answered from the response cache or
    # replayed: a figure mostly from the cache (over `CACHED_SHARE`) is not what the work costs, so it never replaces
    # one measured with its calls made (`merged`); a fresh run's few incidental hits do not count
    cached: dict[str, float] = field(default_factory=dict)

    def fixture_s(self, key: str) -> float:
        """Seconds of one set-up of a fixture's instance: its own figure, else its fixture's average, else 0."""
        return self.fixtures.get(key, self.fixtures.get(fixture_of(key), 0.0))

    def calls_of(self, key: str) -> int:
        """Model calls (cache hits included) of one set-up of a fixture's instance, as `fixture_s` reads it."""
        return self.fixture_calls.get(key, self.fixture_calls.get(fixture_of(key), 0))

    def knows(self, key: str) -> bool:
        """Whether the book has timed a fixture's instance, or its fixture."""
        return key in self.fixtures or fixture_of(key) in self.fixtures

    def uncached(self, key: str) -> bool:
        """Whether a figure (a test's, a set-up instance's own, else its fixture's) was measured with its calls made:
        at most `CACHED_SHARE` of them from the cache."""
        return self.cached.get(key if key in self.fixtures or key in self.tests else fixture_of(key), 0.0) \
            <= CACHED_SHARE

    def calls_the_model(self, fixture: str) -> bool:
        """Whether a fixture's set-up (or an instance's) waits on the model (its seconds then scale with the run's
        pace)."""
        return self.fixture_calls.get(fixture, self.fixture_calls.get(fixture_of(fixture), 1)) > 0

    def cost_of(self, nodeid: str, pending_fixtures: Iterable[str], default_s: float) -> float:
        """Estimated seconds of a test whose wider fixtures `pending_fixtures` are not yet set up."""
        return self.tests.get(nodeid, default_s) + sum(self.fixture_s(f) for f in pending_fixtures)

    def p_decide(self, nodeid: str) -> float:
        """Last run's outcome as the chance of a decision: decided 0.9, undecided 0.1; a test timed but bound to
        no claim (a measurement) none; never seen the prior."""
        if nodeid not in self.decided:
            return MEASURE_P_DECIDE if nodeid in self.tests else PRIOR_P_DECIDE
        return 0.9 if self.decided[nodeid] else 0.1

    def merged(self, newer: "CostBook") -> "CostBook":
        """`newer`'s figures over these, except a figure `newer` measured mostly from the cache or replayed where
        this book has one measured with its calls made: a run after one that was served from the cache still reads
        what the work costs. Each fixture's average over its instances is taken again over them all."""
        measured = newer.fixtures.keys() | newer.tests.keys()
        kept = {k for k in measured if (k in self.fixtures or k in self.tests) and self.uncached(k)
                and not newer.uncached(k)}
        taken = measured - kept
        return CostBook({**self.fixtures, **{k: v for k, v in newer.fixtures.items() if k not in kept}},
                        {**self.tests, **{k: v for k, v in newer.tests.items() if k not in kept}},
                        {**self.decided, **newer.decided}, newer.source or self.source,
                        {**self.fixture_calls, **{k: v for k, v in newer.fixture_calls.items() if k not in kept}},
                        {**self.needed, **newer.needed},
                        newer.pace_vs_prior if newer.pace_vs_prior is not None else self.pace_vs_prior,
                        {**{k: v for k, v in self.cached.items() if k not in taken},
                         **{k: v for k, v in newer.cached.items() if k not in kept}}).averaged()

    def averaged(self) -> "CostBook":
        """The book with each parametrised fixture's figures under its own name the mean over its instances (each
        instance once): what an instance no run has measured (a dataset new to this project) is read at."""
        groups: dict[str, list[str]] = {}
        for key in self.fixtures:
            if key != fixture_of(key):
                groups.setdefault(fixture_of(key), []).append(key)
        fixtures, calls, cached = dict(self.fixtures), dict(self.fixture_calls), dict(self.cached)
        for base, keys in groups.items():
            fixtures[base] = sum(self.fixtures[k] for k in keys) / len(keys)
            calls[base] = max(self.fixture_calls.get(k, 0) for k in keys)
            share = sum(self.cached.get(k, 0.0) for k in keys) / len(keys)
            cached.pop(base, None)
            if share:
                cached[base] = round(share, 3)
        return CostBook(fixtures, dict(self.tests), dict(self.decided), self.source, calls, dict(self.needed),
                        self.pace_vs_prior, cached)

    def scaled(self, ratio: float) -> "CostBook":
        """The book at `ratio` times its pace: every test's seconds, and those of the set-ups that call the model
        (an index keeps its own)."""
        return CostBook({k: v * ratio if self.calls_the_model(k) else v for k, v in self.fixtures.items()},
                        {k: v * ratio for k, v in self.tests.items()}, dict(self.decided), self.source,
                        dict(self.fixture_calls), dict(self.needed), self.pace_vs_prior, dict(self.cached))

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "fixtures": self.fixtures, "tests": self.tests, "decided": self.decided,
                "fixture_calls": self.fixture_calls, "needed": self.needed,
                **({"pace_vs_prior": self.pace_vs_prior} if self.pace_vs_prior is not None else {}),
                **({"cached": self.cached} if self.cached else {})}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "CostBook":
        return cls({str(k): float(v) for k, v in (data.get("fixtures") or {}).items()},
                   {str(k): float(v) for k, v in (data.get("tests") or {}).items()},
                   {str(k): bool(v) for k, v in (data.get("decided") or {}).items()}, str(data.get("source", "")),
                   {str(k): int(v) for k, v in (data.get("fixture_calls") or {}).items()},
                   {str(k): _needed_entry(v) for k, v in (data.get("needed") or {}).items()},
                   _positive(data["pace_vs_prior"]) if data.get("pace_vs_prior") is not None else None,
                   {str(k): float(v) for k, v in (data.get("cached") or {}).items() if float(v)})

    @classmethod
    def load(cls, *paths: Path) -> "CostBook":
        """The books at `paths` merged in order (a later one's figures win, as `merged` says); a missing file adds
        nothing."""
        book = cls()
        for p in paths:
            if p.is_file():
                try:
                    book = book.merged(cls.from_json(json.loads(p.read_text())))
                except (ValueError, TypeError, AttributeError) as exc:
                    raise ValueError(f"{p}: not a cost book ({exc}); delete it to start afresh") from exc
        return book


DECIDED_VERDICTS = ("supported", "refuted", "pass", "fail", "error")


def _needed_entry(value: Any) -> dict[str, Any]:
    """A book's `needed` entry, checked: `queries` a positive number or "never", `why` a text."""
    q = value.get("queries")
    if not (q == "never" or (isinstance(q, (int, float)) and not isinstance(q, bool) and q > 0)):
        raise ValueError(f"needed queries must be a positive number or 'never', got {q!r}")
    return {"queries": q, "why": str(value.get("why", ""))}


def _positive(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ValueError(f"pace_vs_prior must be a positive number, got {value!r}")
    return float(value)


def needed_of(entry: Mapping[str, Any]) -> dict[str, Any] | None:
    """What a report entry (a claim on one dataset) says of the queries the claim needs: decided, the queries it
    was decided on (an entry with no dataset counts no queries: a simulation's trials are not queries); undecided,
    its queries-needed figure (`needed_for` where the figure names its own n), "never" where it was untestable on
    that data; None where it says nothing (an error, or an undecided entry with no figure)."""
    verdict = entry.get("verdict")
    drawn = entry.get("queries_used") or (entry.get("n") if entry.get("dataset") else None)
    if verdict in ("supported", "refuted", "pass", "fail"):
        return {"queries": int(drawn), "why": f"decided ({verdict}) on {int(drawn)} queries"} if drawn else None
    if verdict == "inconclusive" and entry.get("untestable"):  # no number of queries decides it on that data
        return {"queries": "never", "why": "untestable on that data"}
    from harness.stats._verdict import MAX_FALLBACK_RATE

    q = entry.get("queries_needed")
    fallback = entry.get("fallback_rate")
    if verdict == "inconclusive" and q is None and isinstance(fallback, (int, float)) and fallback > MAX_FALLBACK_RATE:
        # a verdict withheld for the fallback, in a report from before it said so: more queries measure it too
        return {"queries": "never", "why": f"the technique fell back on {fallback:.0%} of queries"}
    if verdict != "inconclusive" or q is None:
        return None
    if q == "never" or (isinstance(q, float) and math.isinf(q)):
        return {"queries": "never", "why": entry.get("needed_for") or "estimate = threshold"}
    why = entry.get("needed_for") or (f"80% power, estimated from {int(drawn)} queries" if drawn else "80% power")
    return {"queries": int(math.ceil(float(q))), "why": why} if float(q) > 0 else None


def book_from_results(results: Mapping[str, Any], source: str = "") -> CostBook:
    """The costs a run measured, from its report (`results.json`): each wider-scoped fixture's seconds per setup
    (per instance, and per fixture averaged over its instances), each test's own setup, call and teardown seconds
    (exclusive of the fixtures timed inside), the share of each figure's calls answered from the cache, whether its
    claim ended decided on the test's own dataset (or the test failed or broke), and what that dataset's entry says
    of the queries the claim needs (`needed_of`)."""
    fixtures: dict[str, float] = {}
    calls: dict[str, int] = {}
    tests: dict[str, float] = {}
    counts: dict[str, list[int]] = {}  # figure -> its model calls and cache hits
    phases = (results.get("timing") or {}).get("phases") or []
    # a test whose call never ran (skipped, or refused by the budget: bound to a claim or not) measured nothing of
    # its cost; one bound to a claim and skipped inside its call neither
    ran = {str(p.get("name", "")).removeprefix("call ") for p in phases if p.get("kind") == "call"}
    unrun = {t["nodeid"] for t in results.get("tests") or [] if t.get("outcome") in ("skipped", "budget")}
    unrun |= {str(p.get("name", "")).split(" ", 1)[-1] for p in phases if p.get("kind") in ("setup", "teardown")} - ran
    for p in phases:
        kind, name, wall = p.get("kind"), str(p.get("name", "")), float(p.get("wall_s") or 0.0)
        made, hits = int(p.get("llm_calls") or 0), int(p.get("cache_hits") or 0)
        if kind == "fixture" and p.get("scope") not in (None, "function"):
            key, count = name.removeprefix("fixture "), max(int(p.get("count") or 1), 1)
            fixtures[key], calls[key] = wall / count, -(-(made + hits) // count)
        elif kind in ("setup", "call", "teardown"):
            key = name.removeprefix(f"{kind} ")
            if key in unrun:
                continue
            tests[key] = tests.get(key, 0.0) + wall
        else:
            continue
        tally = counts.setdefault(key, [0, 0])
        tally[0], tally[1] = tally[0] + made, tally[1] + hits
    cached = {k: round(hits / (made + hits), 3) for k, (made, hits) in counts.items() if hits}
    rows = {s["id"]: s for s in results.get("specs") or [] if "id" in s}
    decided, needed = {}, {}
    for t in results.get("tests") or []:
        if t["nodeid"] in unrun:
            continue
        row = rows.get(t.get("spec_id"))
        entries = (row or {}).get("datasets") or []
        mine = [e for e in entries if t.get("dataset") and e.get("dataset") == t["dataset"]]
        entry = mine[0] if mine else entries[0] if len(entries) == 1 else row
        # a test that failed or broke decided its claim there or ended in error (shown early next time): its entry
        # reads "not run" where it broke before its check; an inconclusive one fails only under --strict-verdicts
        verdict = (entry or {}).get("verdict")
        decided[t["nodeid"]] = verdict in DECIDED_VERDICTS or (t.get("outcome") in ("failed", "error")
                                                                and verdict != "inconclusive")
        figure = needed_of(entry) if entry is not None else None
        if figure is not None:
            needed[t["nodeid"]] = figure
    return CostBook(fixtures, tests, decided, source, calls, needed, None, cached).averaged()
