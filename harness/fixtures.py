"""Thin pytest fixtures over the library; heavy imports happen inside, so `pytest -m unit` stays light."""
from __future__ import annotations

import pytest

from harness._pytest_state import catalogue_of, harness_config_of
from harness.catalogue import Catalogue
from harness.config import HarnessConfig

__all__ = ["harness_config", "catalogue"]


@pytest.fixture(scope="session")
def harness_config(pytestconfig: pytest.Config) -> HarnessConfig:
    """The run's typed configuration (wsop.yaml + command-line options)."""
    return harness_config_of(pytestconfig)


@pytest.fixture(scope="session")
def catalogue(pytestconfig: pytest.Config) -> Catalogue:
    return catalogue_of(pytestconfig)
