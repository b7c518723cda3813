"""The plan a budgeted run makes at its start, walked through without running a test: a pytest plugin.

    PYTHONPATH=scripts pytest -m "benchmark and not selfcheck" -p budget_plan --budget 825s -p no:randomly

Collects as the run would (the plan's order, the costs from `<cache_dir>/budget/costs-<model>.json` over the
packaged book, no pace probe: `--collect-only` is implied), then puts each test in that order through the plugin's
own admission (`BudgetHooks.pytest_runtest_setup`) on a clock that advances by each granted test's book figure (its
own seconds and the set-ups it is the first to need). One line per test (RUN or SKIP, the clock, the cost, its
chance of a decision, its weight), then the sums. A sequential claim is costed whole, as one step. What it shows is
the plan on the book's figures, not a run: real costs differ run to run (docs/budget.md). Used for
docs/benchmarks/2026-11-27-budget-comparative-weight.md.
"""
from __future__ import annotations

import pytest

from harness.budget import NotWithinBudget
from harness.plugin.budget import BUDGET_KEY


def pytest_configure(config: pytest.Config) -> None:
    config.option.collectonly = True  # nothing runs, and the pace probe is skipped


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    hooks = session.config.stash[BUDGET_KEY]
    alloc = hooks.allocator
    if alloc.limit_s is None:
        raise pytest.UsageError("budget_plan: give --budget")
    now = [0.0]
    alloc.clock, alloc.started_at = (lambda: now[0]), 0.0
    sums = {"decisions": 0.0, "comparative": 0.0}
    for item in hooks.items:
        # what the plugin's own admission asks for: nothing runs, so only what it admitted is set up
        mine = hooks.unit_of(item, hooks.done)
        setups = sum(alloc.fixture_s.get(f, 0.0) for f in mine.fixtures)
        try:
            hooks.pytest_runtest_setup(item)
        except NotWithinBudget:
            granted = False
        else:
            granted = True
            now[0] += mine.cost_s + setups
            sums["decisions"] += mine.p_decide
            sums["comparative"] += mine.p_decide if item.nodeid in hooks.comparative else 0.0
        print(f"{'RUN ' if granted else 'SKIP'} {now[0]:6.0f} s  {mine.cost_s:6.1f}+{setups:5.1f} s  "
              f"p={mine.p_decide:.1f} w={mine.weight:g}  {item.nodeid}")
    print(f"budget_plan: {now[0]:.0f} of {alloc.limit_s:.0f} s planned; decisions expected {sums['decisions']:.1f}, "
          f"of which comparative {sums['comparative']:.1f}")
