"""Stash keys shared by the plugin's hooks and its fixtures."""
from __future__ import annotations

import pytest

from harness.catalogue import Catalogue
from harness.config import HarnessConfig
from harness.report.collector import Collector

CATALOGUE_KEY = pytest.StashKey[Catalogue]()
CONFIG_KEY = pytest.StashKey[HarnessConfig]()
COLLECTOR_KEY = pytest.StashKey[Collector]()
RESULTS_KEY = pytest.StashKey[dict]()


def catalogue_of(config: pytest.Config) -> Catalogue:
    return config.stash[CATALOGUE_KEY]


def harness_config_of(config: pytest.Config) -> HarnessConfig:
    return config.stash[CONFIG_KEY]
