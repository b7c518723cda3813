"""A user's project for pytester: a pytest.ini with strict markers (pytest-randomly off: the order of a child
run is the test's to choose), and a spec catalogue."""
from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# pytest-asyncio (a dev dependency) warns at configure time in a project that does not set its loop scope
ADDOPTS = "--strict-markers -p no:cacheprovider -p no:randomly -p no:asyncio"
INI = f"""
[pytest]
addopts = {ADDOPTS}
spec_files = specs
filterwarnings = error
"""


def new_project(pytester: pytest.Pytester, catalogue: str) -> pytest.Pytester:
    """`pytester`'s folder as a fresh project holding `catalogue` as specs/demo.yaml, warnings as errors."""
    pytester.makeini(textwrap.dedent(INI))
    (pytester.path / "specs").mkdir()
    (pytester.path / "specs" / "demo.yaml").write_text(textwrap.dedent(catalogue))
    return pytester


def repo_project(pytester: pytest.Pytester) -> pytest.Pytester:
    """`pytester`'s folder as a user's project with this repository's wsop.yaml (the protocol's catalogue comes
    with the installed plugin)."""
    pytester.makeini(f"[pytest]\naddopts = {ADDOPTS}\nharness_config = wsop.yaml\n")
    shutil.copy(ROOT / "wsop.yaml", pytester.path / "wsop.yaml")
    return pytester


def estimate_spec(spec_id: str, title: str, marker: str = "benchmark") -> str:
    """A claim whose figure is an estimate held to `>= 0`: a figure of 0 or more passes, a negative one fails."""
    return f"""
  - id: {spec_id}
    title: {title}
    marker: {marker}
    decision: estimate
    metric: seconds
    comparator: ">="
    threshold: 0
    source: demo"""
