"""Stash keys shared by the plugin's hooks and its fixtures."""
from __future__ import annotations

from typing import Any

import pytest

from harness.catalogue import TIERS, Catalogue, Spec
from harness.config import HarnessConfig
from harness.data.loaded import LoadedSets
from harness.llm.spend import Spend
from harness.report.collector import Collector

CATALOGUE_KEY = pytest.StashKey[Catalogue]()
CONFIG_KEY = pytest.StashKey[HarnessConfig]()
COLLECTOR_KEY = pytest.StashKey[Collector]()
RESULTS_KEY = pytest.StashKey[dict]()
SPEND_KEY = pytest.StashKey[Spend]()
DATASETS_KEY = pytest.StashKey[LoadedSets]()


def catalogue_of(config: pytest.Config) -> Catalogue:
    return config.stash[CATALOGUE_KEY]


def harness_config_of(config: pytest.Config) -> HarnessConfig:
    return config.stash[CONFIG_KEY]


def spend_of(config: pytest.Config) -> Spend:
    """The session's LLM spend (and its cap, `--max-cost`), shared by every client the fixtures make."""
    return config.stash[SPEND_KEY]


def loaded_sets(config: pytest.Config) -> LoadedSets:
    """The session's parsed datasets: what the collection-time check loaded, the fixtures reuse."""
    if DATASETS_KEY not in config.stash:
        config.stash[DATASETS_KEY] = LoadedSets()
    return config.stash[DATASETS_KEY]


def estimating(config: pytest.Config) -> bool:
    """`--estimate-cost`: clients are stand-ins that count, and no verdict is recorded."""
    return bool(config.getoption("estimate_cost", False))

PROP_SPECS = "harness_specs"
PROP_RECORD = "harness_record"
PROP_VERDICT = "harness_verdict"
PROP_CONTROL = "harness_control"
PROP_BUDGET = "harness_budget"  # the test was cut short by the run's cost cap
PROP_FATAL = "harness_fatal"  # the test stopped on a model that cannot be called: an error, never a fail
CONTROL_KEY = pytest.StashKey[dict]()
ISOLATED_KEY = pytest.StashKey[dict]()
REPLAY_KEY = pytest.StashKey[Any]()  # the session's harness.replay.Replay, once a test asked for it


class SpecCheckFailed(AssertionError):
    """A measured value does not satisfy its catalogue spec (fail), or its interval refutes the claim (refuted)."""


class SpecInconclusive(AssertionError):
    """Under --strict-verdicts: the data cannot decide a comparative claim."""


def tiers_of(item: pytest.Item) -> set[str]:
    """The item's tier markers; pytest-benchmark's `benchmark(group=...)` settings marker is not the tier."""
    return {m.name for m in item.iter_markers() if m.name in TIERS and not (m.args or m.kwargs)}


def bound_spec(item: pytest.Item) -> Spec | None:
    """The catalogue spec a test instance is parametrised with (`@pytest.mark.spec`), if any."""
    callspec = getattr(item, "callspec", None)
    if callspec is None:
        return None
    value = callspec.params.get("rag_spec")
    return value if isinstance(value, Spec) else None
