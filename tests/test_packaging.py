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


def _pages() -> dict[str, str]:
    """README.md and every docs page, by path."""
    from tests.docs_kit import doc_files

    return {str(p.relative_to(ROOT)): p.read_text(encoding="utf-8") for p in doc_files(ROOT)}


def test_every_install_line_in_the_readme_and_the_docs_names_this_distribution_or_a_path():
    name = _project()["name"]
    found = 0
    for path, text in _pages().items():
        ours = re.findall(r"pip install (?:-e )?'?([\w.\-/\[\]]*(?:rag-harness|harness)[\w.\-\[\]]*)'?", text)
        found += len(ours)
        for target in ours:
            base = target.split("[")[0]
            assert base == name or "/" in base or base == ".", f"{path} installs {target!r}, not {name}"
        for command in re.findall(r"`(rag-harness) (?:eval|run-experiments|techniques|compare|render)", text):
            raise AssertionError(f"{path} calls `{command}`: the command is ragharness")
    assert found, "neither the README nor the docs have an install line for the package"


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
        project["optional-dependencies"]["local"] + project["optional-dependencies"]["docs"]
    unmet = []
    for text in declared:
        req = Requirement(text)
        name = re.sub(r"[-_.]+", "-", req.name).lower()
        if name not in pins or not req.specifier.contains(pins[name], prereleases=True):
            unmet.append(f"{text} (locked: {pins.get(name, 'absent')})")
    assert not unmet, "constraints.txt does not satisfy pyproject.toml (run scripts/lock.sh): " + "; ".join(unmet)


def test_the_install_scripts_the_readme_and_the_docs_install_with_the_constraints():
    scripts = {name: (ROOT / "scripts" / name).read_text() for name in ("test.sh", "benchmark.sh")}
    for name, text in scripts.items():
        installs = [line for line in text.splitlines()
                    if re.match(r'\s*(pkg_install|install|"\$VENV/bin/pip" install) ', line) and "--upgrade pip" not in line]
        assert installs, name
        assert all("-c constraints.txt" in line for line in installs), (name, installs)
    from tests.docs_kit import blocks

    for path, section in (("README.md", "Quick start"), ("docs/getting-started.md", "Install")):
        install = blocks(path, section, "bash")[0]
        assert install.count("-c constraints.txt") == 2, (path, install)
