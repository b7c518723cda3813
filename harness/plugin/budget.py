"""The pytest side of `--budget`: every benchmark-tier test asks the run's allocator (`harness.budget`) before it
sets anything up, a sequential claim asks again before each later look, and the costs the run measured are kept
for the next run (`<cache_dir>/budget/costs-<model>.json`). A test refused reads `budget` ("not decided within the
budget"); under xdist each worker has the whole budget, since they spend it side by side."""
from __future__ import annotations

import json
import math
import re
import time
from importlib import resources
from pathlib import Path
from typing import Any, Generator

import pytest

from harness.llm.meter import METER
from harness.budget import Allocator, CostBook, Unit, book_from_results, fixture_of, parse_budget, plan_order
from harness.plugin.instances import wider_fixtures
from harness.plugin.preflight import JUDGES, LLM, LOCAL_SERVER
from harness.plugin.state import (CONTROL_KEY, PROP_RECORD, RESULTS_KEY, bound_spec, estimating, harness_config_of,
                                  spend_of)

BUDGET_KEY = pytest.StashKey["BudgetHooks"]()
WORKER_BUDGET = "rag_harness_budget"  # the key of a worker's budget ledger in its xdist workeroutput
DEFAULT_TEST_S = 60.0  # a test this machine has never timed: a minute, until the run measures it
SCALE_AFTER_S = 20.0  # estimated seconds run before the run's own pace rescales the book (another model, machine)
SCALE_RANGE = (0.25, 4.0)
PACE_MIN_S = 1.0  # tests the book has under a second do not count toward the pace
# a set-up counts toward the pace where what it sets up that calls no model (an index) is at most this share of
# what does (a study's first look): the rest of its seconds is then the model's
SET_UP_OTHER_SHARE = 0.25
# a test whose set-ups are all done and whose own estimate is under this reads what the run already paid for (the
# claims of a study that is measured): granted even with the budget spent, each overrunning it by at most this
FREE_READ_S = 1.0
# a probe's ratio up to this reads as the packaged pace: the probe's own spread on one model and machine (SmolLM2 on
# the reference machine: 2.75 to 3.37 s, the median 3.04)
PROBE_SPREAD = 1.15
# fixtures whose set-up calls the run's LLM (preflight's names): a run that needs none has no model pace to probe
MODEL_FIXTURES = frozenset({LLM, LOCAL_SERVER, JUDGES})


def costs_path(cache_dir: Path, model: str) -> Path:
    """Where a model's measured costs are kept: `<cache_dir>/budget/costs-<model>.json`."""
    return cache_dir / "budget" / f"costs-{re.sub(r'[^A-Za-z0-9._-]+', '-', model).strip('-')}.json"


def budget_of(config: pytest.Config) -> "BudgetHooks | None":
    """The session's budget, where `--budget` set one."""
    hooks = config.stash.get(BUDGET_KEY, None)
    return hooks if hooks is not None and hooks.allocator.limit_s is not None else None


def ask_for_rest(config: pytest.Config, fixture: str, key: str, need_s: float | None, what: str, *,
                 queries: int | None = None) -> None:
    """Before a study drawn in looks draws its rest for the claims about its whole selection (the set-up of the
    wider fixture `fixture`): the budget admitted those claims with that set-up's seconds as last measured; where
    the study's own pace says the rest costs more than that (`need_s`: fewer queries drawn before it than last
    time), the rest is asked of the budget under `key` (the admission reserved nothing: all of it must fit what is
    left), worth the decisions of every claim that reads the set-up, and refused raises `NotWithinBudget` (`what`
    says how far the study got): the claims read "not decided within the budget". None (no pace to estimate from:
    nothing drawn yet) asks nothing; the studies' set-ups draw their first look before, so their rest always has a
    pace. `queries`: what the whole study draws, the queries its claims need where the last run that measured them
    says nothing."""
    from harness.budget import SAFETY, NotWithinBudget

    budget = budget_of(config)
    if budget is None or not need_s:
        return
    if need_s > budget.allocator.fixture_s.get(fixture, 0.0) * SAFETY:  # the admission reserved nothing
        why = budget.rest_of_set_up(fixture, key, need_s)
        if why is not None:  # the queries its claims need, where no run measured them: the study's (not measured)
            needed = ({"queries": queries, "why": "the study's whole selection, which it reads", "measured": False}
                      if queries else None)
            raise NotWithinBudget(f"{why} ({what})", needed, started=True)


def book_needed(config: pytest.Config, nodeid: str) -> dict[str, Any] | None:
    """What the last run that measured a test says of the queries its claim needs (the run's cost book, where it
    has one: `CostBook.needed`), else None."""
    hooks = config.stash.get(BUDGET_KEY, None)
    return hooks.book.needed.get(nodeid) if hooks is not None else None


def _prior_json() -> dict[str, Any]:
    return json.loads(resources.files("harness").joinpath("budget_prior.json").read_text())


def prior_book() -> CostBook:
    """The packaged costs, measured on the reference machine (their `source` says which run)."""
    return CostBook.from_json(_prior_json())


def prior_probe() -> dict[str, Any] | None:
    """The pace probe's seconds on the packaged book's model and machine (`pace_probe`: seconds, model, source)."""
    return _prior_json().get("pace_probe")


def _budgeted(item: pytest.Item) -> bool:
    return item.get_closest_marker("benchmark") is not None and item.stash.get(CONTROL_KEY, None) is None


def _links(fixtures: list[tuple[str, Any]], nodeid: str) -> set[str]:
    """What an item must stay beside when the run is reordered: its module, and each instance of a wider-scoped
    fixture that depends on a parametrised one (moved apart, either would be set up twice); `fixtures` is the
    item's `wider_fixtures`."""
    return {nodeid.split("::", 1)[0]} | {key for key, _ in fixtures if key != fixture_of(key)}


class BudgetHooks:
    """Admits each benchmark test, and each later look of a sequential claim, within the run's budget."""

    def __init__(self, config: pytest.Config, limit_s: float | None):
        self.config = config
        h = harness_config_of(config).harness
        self.path = costs_path(h.cache_dir, h.llm.model)
        self.comparative_weight = h.budget.comparative_weight
        self.own, self.prior = CostBook.load(self.path), prior_book()
        self._read_prior_at(self.own.pace_vs_prior or 1.0)
        self.allocator = Allocator(limit_s, fixture_s=dict(self.book.fixtures))
        self.fixtures: dict[str, list[tuple[str, Any]]] = {}  # nodeid -> its `wider_fixtures`, read at collection
        self.comparative: set[str] = set()  # the tests bound to a comparative claim: worth `comparative_weight`
        self.keys: set[str] = set()  # the wider fixtures' instances the benchmark tests need
        self.done: set[str] = set()  # those the tests admitted so far set up
        self.items: list[pytest.Item] = []  # the benchmark tests, in run order
        self.workers: list[dict[str, Any]] = []  # xdist's controller: each worker's ledger (`summary`)
        self.started: set[str] = set()  # those that have asked (granted or refused)
        self.scale = 1.0  # this run's pace over the book's: actual seconds / estimated, over the tests run so far
        self._running: dict[str, float] = {}  # nodeid -> its own seconds in the book, until its call is reported
        self._pace = [0.0, 0.0]  # estimated, actual seconds of the tests finished
        self._meter: dict[str, dict[str, int]] = {}  # nodeid -> the LLM meter when it was admitted
        # nodeid -> the book's seconds and calls of the set-ups it needs that call the model, and of those that do
        # not, the meter as its set-up starts, and whether the book timed each of them, with every call made
        # (`_set_up_pace`)
        self._set_ups: dict[str, tuple[float, int, float, dict[str, int], bool]] = {}
        self.probe: dict[str, Any] | None = None  # the pace probe, where this run made one
        self.pace_vs_prior: float | None = None  # the packaged figures' scale it set, kept in this model's book
        self._probe_spend: list[dict[str, Any]] = []  # its calls, until the first test carries them into the report

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        """The benchmark tests wait in the plan (and, budget or not, are the tests whose costs the run keeps).
        Under a budget they run in the order the plan picks them (`plan_order`): what the budget takes first, so
        estimates that were short cost the claims worth least."""
        self.items = [item for item in items if _budgeted(item)]
        if self.allocator.limit_s is None:
            return
        self.fixtures = {i.nodeid: wider_fixtures(i) for i in items}
        self.comparative = {i.nodeid for i in self.items if (spec := bound_spec(i)) and spec.comparative}
        self.keys = {key for i in self.items for key, _ in self.fixtures[i.nodeid]}
        self.probe_pace()
        self.allocator.fixture_s = self._fixture_costs()
        self.replan(set())
        place = {key: n for n, key in enumerate(self.allocator.picks())}
        rank = [float(place.get(i.nodeid, math.inf)) if _budgeted(i) else None for i in items]
        items[:] = [items[n] for n in plan_order([_links(self.fixtures[i.nodeid], i.nodeid) for i in items], rank)]
        self.items = [item for item in items if _budgeted(item)]

    def pytest_deselected(self, items: list[pytest.Item]) -> None:
        """Tests deselected after the plan was made leave it: pytest's `--lf` deselects the passed tests of a file
        named on the command line in a hook wrapper that ends after every plugin's collection hook, this one's too,
        and a test that will not run must not keep the budget from one that will."""
        gone = {item.nodeid for item in items}
        self.items = [item for item in self.items if item.nodeid not in gone]
        for key in gone:
            self.allocator.waiting.pop(key, None)

    def probe_pace(self) -> None:
        """A model whose pace against the packaged book's no probe has measured (a fresh clone, a new model) would
        have the packaged figures, measured with another model, read at that model's pace: its pace is probed
        before the plan is made (`harness.llm.pace`, against the same probe on the packaged book's model and
        machine), and the packaged figures raised by the ratio where it is past the probe's own spread
        (`PROBE_SPREAD`; never lowered, at most `SCALE_RANGE[1]` times;
        this project's own figures are already at its pace). The ratio is kept in the model's book, so later runs
        read the packaged figures at it without probing again. Nothing is probed where the run needs no model,
        only estimates or collects, or stops at the preflight (a missing package or dataset)."""
        ref = prior_probe()
        if (ref is None or self.own.pace_vs_prior is not None or self.config.option.collectonly
                or estimating(self.config)
                or not any(MODEL_FIXTURES & set(getattr(i, "fixturenames", ())) for i in self.items)):
            return
        from harness.plugin.preflight import dataset_problems, local_model_problems, usage_error

        if local_model_problems(self.config, self.items) or dataset_problems(self.config, self.items):
            return  # the preflight stops the run with every problem at once
        from harness.llm.pace import probe_seconds
        from harness.llm.spend import BudgetExhausted
        from harness.plugin.model_fixtures import pace_client

        model = harness_config_of(self.config).harness.llm.model
        before = spend_of(self.config).rows()
        try:
            with pace_client(self.config) as client:
                seconds = probe_seconds(client)
        except pytest.UsageError:
            raise  # a bad option (a cost cap on a model with no price) says so itself
        except BudgetExhausted as exc:  # the cost cap: nothing is probed, and the claims meet the cap themselves
            self.probe = {"model": model, "skipped": str(exc)}
            return
        except Exception as exc:  # noqa: BLE001 - any failure stops the run in one line, as a model call's would
            raise usage_error(self.config, f"the budget's pace probe could not call {model}: "
                                           f"{type(exc).__name__}: {exc}") from None
        finally:
            self._probe_spend = spend_of(self.config).rows_since(before)
        ratio = seconds / float(ref["seconds"])
        self.pace_vs_prior = min(ratio, SCALE_RANGE[1]) if ratio > PROBE_SPREAD else 1.0
        self._read_prior_at(self.pace_vs_prior)
        self.probe = {"model": model, "seconds": round(seconds, 4), "reference_s": ref["seconds"],
                      "reference_model": ref["model"], "ratio": round(ratio, 3), "applied": round(self.pace_vs_prior, 3)}

    def _read_prior_at(self, ratio: float) -> None:
        """The book: the packaged figures at `ratio` times their pace (a pace probe's), this project's own over
        them; a test never timed costs the packaged minute at that pace too."""
        self.book = self.prior.scaled(ratio).merged(self.own)
        self.default_s = DEFAULT_TEST_S * ratio

    def _fixture_costs(self) -> dict[str, float]:
        """Each wider fixture's seconds per set-up at this run's pace, by instance (an instance the book never
        timed at its fixture's average)."""
        return {k: self.book.fixture_s(k) * (self.scale if self.book.calls_the_model(k) else 1.0)
                for k in {*self.book.fixtures, *self.keys}}

    def unit_of(self, item: pytest.Item, set_up: set[str]) -> Unit:
        """A test as the allocator sees it: its own seconds, its chance of a decision, the wider fixtures it still
        needs (their seconds are the allocator's `fixture_s`), what its decision is worth."""
        return Unit(item.nodeid, self.scale * self.book.tests.get(item.nodeid, self.default_s),
                    self.book.p_decide(item.nodeid),
                    frozenset(n for n, _ in self.fixtures.get(item.nodeid, ()) if n not in set_up),
                    weight=self.weight_of(item.nodeid))

    def replan(self, set_up: set[str]) -> None:
        """The waiting tests' costs as things stand, the fixtures already set up counted as done."""
        self.allocator.plan((self.unit_of(i, set_up) for i in self.items if i.nodeid not in self.started),
                            replace=True)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        """Refuse, before any fixture is set up, a test the plan for the budget left does not take."""
        if self._probe_spend:  # the pace probe's calls are spent like any test's: the first test carries them
            from harness.report.collector import jsonable

            item.user_properties.append((PROP_RECORD, json.dumps(jsonable(
                {"kind": "spend", "nodeid": "pace probe", "rows": self._probe_spend}), sort_keys=True)))
            self._probe_spend = []
        if self.allocator.limit_s is None or not _budgeted(item):
            return
        from harness.budget import NotWithinBudget

        defs = {n: d for i in self.items for n, d in self.fixtures[i.nodeid]}
        # an instance of a parametrised fixture is set up once a test that needs it was admitted; another fixture
        # also where an earlier test (budgeted or not) set it up
        set_up = self.done | {n for n, d in defs.items()
                              if n == fixture_of(n) and getattr(d, "cached_result", None) is not None}
        self.started.add(item.nodeid)
        self.replan(set_up)
        mine = self.unit_of(item, set_up)
        why = self.allocator.ask(mine, free_s=FREE_READ_S)
        if why is not None:  # never started: what the last run that measured it says of the queries it needs
            raise NotWithinBudget(why, self.book.needed.get(item.nodeid))
        self._running[item.nodeid] = self.book.tests.get(item.nodeid, self.default_s)
        self.done |= mine.fixtures
        model = [k for k in mine.fixtures if self.book.calls_the_model(k)]
        self._set_ups[item.nodeid] = (sum(self.book.fixture_s(k) for k in model),
                                      sum(self.book.calls_of(k) for k in model),
                                      sum(self.book.fixture_s(k) for k in mine.fixtures if k not in model),
                                      METER.snapshot(),
                                      all(self.book.knows(k) and self.book.uncached(k) for k in mine.fixtures))

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_call(self, item: pytest.Item) -> None:
        """The model's calls so far, as the test's own call starts (after its fixtures: a study's first look drawn in
        its set-up is not the test's own call)."""
        if item.nodeid in self._running:
            self._meter[item.nodeid] = METER.snapshot()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """A test's own time (its call) against its book figure, and a set-up's that waits on the model (a study's
        first look, `_set_up_pace`): once enough has run, the book's figures are rescaled to this run's pace (a
        slower model or machine than the one measured, or a pace probe that read it wrong). Tests that made no
        model call are left out: one that calls none (an index-time check), or one served from the cache or
        replayed."""
        if report.when == "setup" and report.nodeid in self._set_ups:
            self._set_up_pace(report)
        if report.when != "call" or report.nodeid not in self._running:
            return
        estimate = self._running.pop(report.nodeid)
        before, now = self._meter.pop(report.nodeid, None), METER.snapshot()
        if before is not None and now["llm_calls"] == before["llm_calls"]:
            return  # no model call (it calls none, or was served from the cache or replayed): not the model's pace
        if estimate < PACE_MIN_S:  # a test the book has as (nearly) free: its ratio would be noise or infinite
            return
        self._paced(estimate, float(report.duration))

    def _set_up_pace(self, report: pytest.TestReport) -> None:
        """A set-up's seconds against the book's, where it sets up what calls the model and little else (an index
        of at most `SET_UP_OTHER_SHARE` of its seconds, taken at the book's figure), it passed, it made at least
        the model calls the book's set-ups made with none from the cache, and the book timed each of its set-ups
        with every call made: a set-up partly replayed, one that is mostly an index, one the book never timed (its
        seconds would all read as the model's) or timed from the cache says nothing of the model's pace."""
        model_s, calls, other_s, before, timed = self._set_ups.pop(report.nodeid)
        now = METER.snapshot()
        made, hits = now["llm_calls"] - before["llm_calls"], now["cache_hits"] - before["cache_hits"]
        if (report.passed and timed and model_s >= PACE_MIN_S and other_s <= SET_UP_OTHER_SHARE * model_s
                and made > 0 and made >= calls and hits == 0):
            self._paced(model_s, max(float(report.duration) - other_s, 0.0))

    def _paced(self, estimate: float, actual: float) -> None:
        """One more measured stretch of model work: the pace, once `SCALE_AFTER_S` estimated seconds are in."""
        self._pace[0] += estimate
        self._pace[1] += actual
        if self._pace[0] >= SCALE_AFTER_S:
            self.scale = min(max(self._pace[1] / self._pace[0], SCALE_RANGE[0]), SCALE_RANGE[1])
            self.allocator.fixture_s = self._fixture_costs()

    def look(self, nodeid: str, step_s: float, to_end_s: float, p_decide: float | None) -> str | None:
        """A sequential claim's next look: None where granted, else why not."""
        p = p_decide if p_decide is not None and math.isfinite(p_decide) else self.book.p_decide(nodeid)
        return self.allocator.request(nodeid, step_s, to_end_s=to_end_s, p_decide=p, weight=self.weight_of(nodeid))

    def rest_of_set_up(self, fixture: str, key: str, step_s: float) -> str | None:
        """A shared set-up's further step (the rest of a study): None where granted, else why not. It is worth the
        decisions its claims are expected to make (each weighed as `unit_of` does), since it serves them all."""
        users = [i.nodeid for i in self.items
                 if any(fixture_of(n) == fixture for n, _ in self.fixtures.get(i.nodeid, ()))
                 and i.nodeid not in self.allocator.refused]
        worth = sum(self.weight_of(u) * self.book.p_decide(u) for u in users) or 1.0
        return self.allocator.request(key, step_s, to_end_s=step_s, p_decide=1.0, weight=worth)

    def weight_of(self, nodeid: str) -> float:
        """What a test's decision is worth to the plan: a comparative claim's the setting's, any other 1."""
        return self.comparative_weight if nodeid in self.comparative else 1.0

    def summary(self) -> dict[str, Any]:
        """What the budget allowed, spent, granted and refused, for the report; under xdist the controller's is its
        workers' together (each had the whole budget: the longest's seconds, every grant and refusal)."""
        parts = [self.allocator.summary(), *self.workers]
        return {"limit_s": self.allocator.limit_s, "spent_s": max(p["spent_s"] for p in parts),
                "steps_granted": sum(p["steps_granted"] for p in parts),
                "refused": {k: v for p in parts for k, v in p["refused"].items()},
                **({"workers": len(self.workers)} if self.workers else {})}

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        """xdist's controller: a worker's ledger, for the report."""
        part = (getattr(node, "workeroutput", None) or {}).get(WORKER_BUDGET)
        if part is not None:
            self.workers.append(part)

    @pytest.hookimpl(wrapper=True, trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> Generator[None, Any, Any]:
        """After the report is written: this run's benchmark tests' costs kept for the next; a run with no benchmark
        test, such as the unit tier, keeps nothing. A worker leaves it to the controller, which collects nothing and
        keeps the benchmark tests its report names (those bound to a claim); it hands its ledger over first."""
        workeroutput = getattr(self.config, "workeroutput", None)
        if workeroutput is not None and self.allocator.limit_s is not None:
            workeroutput[WORKER_BUDGET] = self.allocator.summary()
        result = yield
        results = self.config.stash.get(RESULTS_KEY, None)
        controller = not session.items and self.config.pluginmanager.has_plugin("dsession")
        if results is not None and not hasattr(self.config, "workerinput"):
            measured = book_from_results(results, source="measured by this project's last run")
            ids = ({t["nodeid"] for t in results.get("tests") or [] if t.get("tier") == "benchmark"} if controller
                   else {i.nodeid for i in self.items})
            day = time.strftime("%Y-%m-%d")
            measured = CostBook(measured.fixtures, {k: v for k, v in measured.tests.items() if k in ids},
                                {k: v for k, v in measured.decided.items() if k in ids}, measured.source,
                                measured.fixture_calls,
                                {k: {**v, "why": f"{v['why']}, in this project's run of {day}"}
                                 for k, v in measured.needed.items() if k in ids}, self.pace_vs_prior,
                                {k: v for k, v in measured.cached.items() if k in ids or k in measured.fixtures})
            if measured.tests:
                from harness.report.atomic import atomic_write

                self.path.parent.mkdir(parents=True, exist_ok=True)
                kept = CostBook.load(self.path).merged(measured)
                atomic_write(self.path, json.dumps(kept.to_json(), indent=1, sort_keys=True))
        return result


def register(config: pytest.Config) -> None:
    """Parse `--budget` (a usage error names a bad value) and register the hooks once."""
    try:
        limit = parse_budget(config.getoption("budget", None))
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None
    if BUDGET_KEY not in config.stash:
        hooks = BudgetHooks(config, limit)
        config.stash[BUDGET_KEY] = hooks
        config.pluginmanager.register(hooks, "rag-harness-budget")
