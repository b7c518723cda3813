"""Every field of every configuration model has a description (the generated configuration reference reads them),
and the Literal types of verdicts, decision rules, tests and comparators hold exactly the values the code uses."""
from __future__ import annotations

import inspect
from typing import get_args

import pytest
from pydantic import BaseModel, Field

import harness.config_models as models
from harness.catalogue._catalogue import _COMPARATORS
from harness.config import HarnessConfig, config_models
from harness.stats._effect import Effect
from harness.stats._verdict import (
    DIRECTIONAL, RULES, TESTS, Comparator, Decision, DecisionRule, DirectionalComparator, TestName, VerdictName,
    below_min_n, decide, decide_estimate,
)
from harness.stats.sequential import DECIDED

pytestmark = pytest.mark.unit


def _undescribed(classes: list[type[BaseModel]]) -> list[str]:
    return [f"{m.__name__}.{name}" for m in classes for name, f in m.model_fields.items()
            if not (f.description or "").strip()]


def test_the_walk_reaches_every_configuration_model():
    defined = {obj for _, obj in inspect.getmembers(models, inspect.isclass)
               if issubclass(obj, BaseModel) and obj.__module__ == models.__name__ and not obj.__name__.startswith("_")}
    reached = config_models()
    assert reached[0] is HarnessConfig
    assert set(reached) == defined and len(reached) == len(defined) == 16


def test_every_configuration_field_has_a_description():
    assert _undescribed(config_models()) == []


def test_a_field_without_a_description_is_named():
    class Partly(BaseModel):
        described: int = Field(default=1, description="One.")
        bare: int = 2
        blank: str = Field(default="", description="  ")

    class Outer(BaseModel):
        inner: Partly | None = None
        many: dict[str, list[Partly]] = Field(default_factory=dict, description="Some.")

    assert config_models(Outer) == [Outer, Partly]
    assert _undescribed(config_models(Outer)) == ["Outer.inner", "Partly.bare", "Partly.blank"]


def test_decision_literals_are_the_catalogues_tuples():
    assert get_args(DecisionRule) == RULES == ("ci", "test", "estimate")
    assert get_args(TestName) == TESTS
    assert get_args(DirectionalComparator) == DIRECTIONAL
    assert set(get_args(Comparator)) == set(_COMPARATORS) and len(get_args(Comparator)) == len(_COMPARATORS)
    assert set(DIRECTIONAL) < set(get_args(Comparator))


def _effect(lo: float, hi: float) -> Effect:
    return Effect("difference", (lo + hi) / 2, (lo, hi), 30, 0.1)


def test_verdict_name_is_every_verdict_decided_and_no_other():
    ci = Decision("ci")
    verdicts = [decide(_effect(0.1, 0.2), ">=", 0.0, ci), decide(_effect(-0.2, -0.1), ">=", 0.0, ci),
                decide(_effect(-0.1, 0.1), ">=", 0.0, ci), decide(_effect(0.1, 0.2), ">=", 0.0, ci, error_rate=0.5),
                decide_estimate(True), decide_estimate(False), below_min_n(decide_estimate(True), 3, 10)]
    assert [v.verdict for v in verdicts] == ["supported", "refuted", "inconclusive", "error", "pass", "fail",
                                             "inconclusive"]
    assert {v.verdict for v in verdicts} == set(get_args(VerdictName))
    assert set(DECIDED) <= set(get_args(VerdictName))
