"""The README's "Adding a spec" example, run as a new user would: its YAML as the catalogue, its test as the
test file, the negative control from "Every pass earned" in conftest.py, through pytest in a subprocess."""
from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit
pytest_plugins = ["pytester"]
README = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")


def _blocks(section: str, lang: str) -> list[str]:
    body = README.split(f"## {section}\n", 1)[1].split("\n## ", 1)[0]
    return [textwrap.dedent(b) for b in re.findall(rf"```{lang}\n(.*?)```", body, flags=re.S)]


def test_adding_a_spec_example_runs_as_written(pytester: pytest.Pytester):
    (catalogue,), (test_code,) = _blocks("Adding a spec", "yaml"), _blocks("Adding a spec", "python")
    control = _blocks("Every pass earned: negative controls", "python")[0]
    pytester.makeini("[pytest]\naddopts = --strict-markers -p no:cacheprovider\nspec_files = specs\n"
                     "filterwarnings = error\n")
    (pytester.path / "specs").mkdir()
    (pytester.path / "specs" / "myteam.yaml").write_text(catalogue)
    pytester.makepyfile(mylib="def rerank(query, hits):\n    return sorted(hits)\n")
    pytester.makeconftest(control)
    pytester.makepyfile(test_myteam=test_code)
    result = pytester.runpytest_subprocess("--report-dir", "out", "-m", "benchmark")
    result.assert_outcomes(passed=1)
    row = json.loads((pytester.path / "out" / "results.json").read_text())["specs"][0]
    assert row["id"] == "MYTEAM-001" and row["verdict"] == "supported"
