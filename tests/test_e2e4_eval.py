"""The E2-E4 study's "all 150 queries" figures when --max-queries runs a subset."""
from __future__ import annotations

import math

import pytest

from harness.techniques.e2e4.evaluation import all_queries_figure

pytestmark = pytest.mark.unit


def test_a_full_run_reports_its_count():
    assert all_queries_figure(150, 150, 150) == (150, {})
    assert all_queries_figure(150, 150, 149) == (149, {})


def test_a_failure_in_a_subset_already_refutes():
    """12 of 30 processed: the claim about all 150 falls short whatever the other 120 do."""
    assert all_queries_figure(30, 150, 12) == (12, {})


def test_a_clean_subset_cannot_confirm():
    value, why = all_queries_figure(30, 150, 30)
    assert math.isnan(value)
    assert "30 of the 150" in why["reason"] and "--max-queries 0" in why["reason"]
    assert why["queries_needed"] == 150  # the claim names its own n: all of them
    assert why["needed_for"] == "the claim is about all 150"
