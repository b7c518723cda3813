"""A user's project for pytester: a pytest.ini with strict markers and warnings as errors, and a spec catalogue."""
from __future__ import annotations

import textwrap

import pytest

INI = """
[pytest]
addopts = --strict-markers -p no:cacheprovider -p no:randomly
spec_files = specs
filterwarnings = error
"""


def new_project(pytester: pytest.Pytester, catalogue: str) -> pytest.Pytester:
    """`pytester`'s folder as a fresh project holding `catalogue` as specs/demo.yaml (pytest-randomly off in the
    children: their order is the test's to choose)."""
    pytester.makeini(textwrap.dedent(INI))
    (pytester.path / "specs").mkdir()
    (pytester.path / "specs" / "demo.yaml").write_text(textwrap.dedent(catalogue))
    return pytester
