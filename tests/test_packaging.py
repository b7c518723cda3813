"""The distribution's own names: a pytest plugin's `pytest-` name and a command that is not another project's."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

pytestmark = pytest.mark.unit
ROOT = Path(__file__).resolve().parents[1]
# names on PyPI that belong to other projects (checked against PyPI's index, 2026-11): never ours
TAKEN = {"rag-harness", "harness"}


def _project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def test_the_distribution_follows_the_pytest_plugin_convention_and_is_not_a_taken_name():
    project = _project()
    assert project["name"].startswith("pytest-") and project["name"] not in TAKEN
    assert "pytest11" in project["entry-points"]


def test_the_command_is_not_another_projects():
    scripts = _project()["scripts"]
    assert set(scripts) == {"ragharness"} and not set(scripts) & TAKEN


def test_every_install_line_in_the_readme_names_this_distribution_or_a_path():
    name = _project()["name"]
    readme = (ROOT / "README.md").read_text()
    ours = re.findall(r"pip install (?:-e )?'?([\w.\-/\[\]]*(?:rag-harness|harness)[\w.\-\[\]]*)'?", readme)
    assert ours, "the README has no install line for the package"
    for target in ours:
        base = target.split("[")[0]
        assert base == name or "/" in base or base == ".", f"README installs {target!r}, not {name}"
    for command in re.findall(r"`(rag-harness) (?:eval|run-experiments|techniques|compare|render)", readme):
        raise AssertionError(f"README calls `{command}`: the command is ragharness")


def _constraints() -> dict[str, str]:
    pins = {}
    for number, line in enumerate((ROOT / "constraints.txt").read_text().splitlines(), 1):
        if line.strip() and not line.startswith("#"):
            name, sep, version = line.partition("==")
            assert sep, f"constraints.txt:{number}: not a name==version pin: {line!r}"
            pins[re.sub(r"[-_.]+", "-", name).lower()] = version
    return pins


def test_the_constraints_pin_every_declared_dependency_within_its_range():
    """The lock the install scripts use (`-c constraints.txt`) satisfies pyproject: no declared range excludes it."""
    from packaging.requirements import Requirement

    pins = _constraints()
    project = _project()
    declared = project["dependencies"] + project["optional-dependencies"]["dev"] + \
        project["optional-dependencies"]["local"]
    unmet = []
    for text in declared:
        req = Requirement(text)
        name = re.sub(r"[-_.]+", "-", req.name).lower()
        if name not in pins or not req.specifier.contains(pins[name], prereleases=True):
            unmet.append(f"{text} (locked: {pins.get(name, 'absent')})")
    assert not unmet, "constraints.txt does not satisfy pyproject.toml (run scripts/lock.sh): " + "; ".join(unmet)


def test_the_install_scripts_and_readme_install_with_the_constraints():
    scripts = {name: (ROOT / "scripts" / name).read_text() for name in ("test.sh", "benchmark.sh")}
    for name, text in scripts.items():
        installs = [line for line in text.splitlines()
                    if re.match(r'\s*(install|"\$VENV/bin/pip" install) ', line) and "--upgrade pip" not in line]
        assert installs, name
        assert all("-c constraints.txt" in line for line in installs), (name, installs)
    quick_start = (ROOT / "README.md").read_text().split("## Quick start", 1)[1].split("```bash", 1)[1].split("```")[0]
    assert quick_start.count("-c constraints.txt") == 2, quick_start
