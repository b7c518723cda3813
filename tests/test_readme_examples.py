"""The README's examples, run as a new user would: in a fresh project outside the repository, each file the README
says to write holding exactly its block, and the command it gives run as written; nothing else set up."""
from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.pytester_kit import repo_project

pytest_plugins = ["pytester"]
README = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")


def _blocks(section: str, lang: str) -> list[str]:
    body = README.split(f"## {section}\n", 1)[1].split("\n## ", 1)[0]
    return [textwrap.dedent(b) for b in re.findall(rf"```{lang}\n(.*?)```", body, flags=re.S)]


def _adding_a_spec(project: Path) -> str:
    """The files "Adding a spec" says to write, each exactly its block, in `project`; its command."""
    (catalogue,), (test_code,) = _blocks("Adding a spec", "yaml"), _blocks("Adding a spec", "python")
    (project / "specs").mkdir()
    (project / "specs" / "myteam.yaml").write_text(catalogue)
    (project / "test_myteam.py").write_text(test_code)
    (cmd,) = _blocks("Adding a spec", "bash")
    return cmd.strip()


@pytest.mark.integration
def test_adding_a_spec_example_runs_as_written(tmp_path: Path):
    """No ini, no option: the project's specs/ is found and added to the protocol's catalogue; the report holds
    the project's one spec, supported."""
    cmd = _adding_a_spec(tmp_path)
    _run(cmd, tmp_path)
    rows = json.loads((tmp_path / "reports" / "results.json").read_text())["specs"]
    assert [(r["id"], r["verdict"]) for r in rows] == [("MYTEAM-001", "supported")]


@pytest.mark.integration
def test_negative_control_example_registers_the_control_the_spec_names(tmp_path: Path):
    """"Every pass earned"'s conftest.py beside the "Adding a spec" project registers the control MYTEAM-001
    names (`mylib` is the user's own library, which the block imports: a stand-in with a `rerank`); without it
    the same run is a usage error naming the control."""
    cmd = _adding_a_spec(tmp_path)
    (tmp_path / "mylib.py").write_text("def rerank(query, hits):\n    return sorted(hits)\n")
    with_control = f"{cmd} --under-control my-reranker-keeps-input-order"
    proc = _run(with_control, tmp_path, check=False)
    assert proc.returncode == 4 and "unknown negative control" in proc.stderr, proc.stdout[-2000:] + proc.stderr
    (tmp_path / "conftest.py").write_text(_blocks("Every pass earned: negative controls", "python")[0])
    _run(with_control, tmp_path)
    rows = json.loads((tmp_path / "reports" / "results.json").read_text())["specs"]
    assert [(r["id"], r["verdict"]) for r in rows] == [("MYTEAM-001", "supported")]


@pytest.mark.integration
def test_a_project_id_the_protocol_has_is_an_error_naming_both_files(tmp_path: Path):
    """The README's promise beside "Adding a spec": a project spec reusing a protocol id stops the run."""
    cmd = _adding_a_spec(tmp_path)
    mine = tmp_path / "specs" / "myteam.yaml"
    mine.write_text(mine.read_text().replace("MYTEAM-001", "HYDE-002"))
    proc = _run(cmd, tmp_path, check=False)
    assert proc.returncode == 4, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert f"{mine.resolve()}: spec HYDE-002: duplicate id (first defined in " in proc.stderr
    assert f"{Path('harness', 'catalogue', 'hyde.yaml')}, the protocol's catalogue" in proc.stderr


# ---------------------------------------------------------------- every fenced block of the README
ROOT = Path(__file__).resolve().parents[1]
# (section, language, index within the section) -> the test that runs it, or why it is not run by a test
BLOCKS = {
    ("Quick start (fresh machine, Python ≥ 3.10)", "bash", 0): "exempt: the install (scripts/test.sh and "
                                                               "scripts/benchmark.sh install the same)",
    ("Quick start (fresh machine, Python ≥ 3.10)", "bash", 1):
        "test_the_readme_command_ends_with_a_supported_a_refuted_and_an_inconclusive_claim",
    ("Quick start (fresh machine, Python ≥ 3.10)", "bash", 2): "exempt: the test command itself (CI runs it)",
    ("Quick start (fresh machine, Python ≥ 3.10)", "bash", 3): "exempt: the main job (the hour-long benchmark tier)",
    ("Using it in your project", "yaml", 0): "test_your_corpus_config_is_the_user_projects",
    ("Using it in your project", "bash", 0): "tests/test_user_project.py::test_the_protocols_claims_run_on_the_users_"
                                             "corpus (the same options, a scripted model in place of a live one)",
    ("Using it in your project", "python", 0): "test_using_it_in_your_project_example_runs",
    ("Using it in your project", "bash", 1): "test_using_it_in_your_project_example_runs",
    ("Techniques", "bash", 0): "test_techniques_command_runs",
    ("Techniques", "python", 0): "test_techniques_python_example_prints_what_it_says",
    ("Techniques", "python", 1): "test_your_own_technique_runs_the_existing_claims",
    ("Techniques", "bash", 1): "test_your_own_technique_runs_the_existing_claims",
    ("Recorded traffic", "bash", 0): "exempt: re-recording needs the local extra (llama.cpp); the cassettes it "
                                     "writes are replayed by the integration tier",
    ("Live models: concurrency, rate limits, cost and progress", "bash", 0):
        "test_estimate_cost_command_runs",
    ("Live models: concurrency, rate limits, cost and progress", "bash", 1):
        "exempt: a live OpenAI run needs a key; the same options run in tests/test_plugin.py "
        "(test_max_cost_cuts_claims_short_as_budget, test_estimate_cost_calls_nothing_and_judges_nothing)",
    ("Live models: concurrency, rate limits, cost and progress", "text", 0): "exempt: sample output",
    ("Adding a spec", "yaml", 0): "test_adding_a_spec_example_runs_as_written",
    ("Adding a spec", "python", 0): "test_adding_a_spec_example_runs_as_written",
    ("Adding a spec", "bash", 0): "test_adding_a_spec_example_runs_as_written",
    ("Verdicts", "python", 0): "test_verdicts_snippet_runs",
    ("Every pass earned: negative controls", "python", 0):
        "test_negative_control_example_registers_the_control_the_spec_names",
    ("TREC runs out and in", "bash", 0): "test_trec_eval_command_runs",
    ("What is where", "", 0): "exempt: the layout, not code",
    ("Public QA and multiple-choice sets", "yaml", 0): "test_own_qa_set_config_loads_as_written",
    ("Scale: streaming ingestion, ANN with its recall, and Ray", "yaml", 0): "test_index_uri_config_loads_as_written",
    ("Scale: streaming ingestion, ANN with its recall, and Ray", "bash", 0):
        "exempt: needs the [ray] extra, a cluster and an object store; tests/test_ray_ingest.py runs ray-index on a "
        "local Ray",
}


def _all_blocks() -> list[tuple[str, str, int]]:
    """(section, language, index) of every fenced block, opening fences only."""
    out, counts, inside = [], {}, False
    for part in README.split("\n## ")[1:]:
        section = part.split("\n", 1)[0].strip()
        for m in re.finditer(r"^ *```(\w*) *$", part, flags=re.M):
            inside = not inside
            if inside:
                key = (section, m.group(1))
                out.append((section, m.group(1), counts.get(key, 0)))
                counts[key] = counts.get(key, 0) + 1
    return out


@pytest.mark.unit
def test_your_corpus_config_is_the_user_projects(tmp_path: Path):
    """The README's configuration for a corpus of one's own validates and names the sets of fixtures/user_project,
    the project tests/test_user_project.py runs the protocol's claims in."""
    from harness.config import load_config

    (tmp_path / "rag.yaml").write_text(_blocks("Using it in your project", "yaml")[0])
    readme = load_config(tmp_path / "rag.yaml").harness
    project = load_config(Path(__file__).resolve().parents[1] / "fixtures" / "user_project" / "rag.yaml").harness
    assert (readme.data_dir, readme.datasets.retrieval, readme.datasets.crag) == \
        (project.data_dir, project.datasets.retrieval, project.datasets.crag) == (Path("data"), ["bikeshop"], "bikeshop")


@pytest.mark.unit
def test_own_qa_set_config_loads_as_written(tmp_path: Path):
    """The README's per-family dataset settings validate, and each family resolves to the folder it names."""
    from harness.config import load_config

    (cfg := tmp_path / "rag-harness.yaml").write_text(_blocks("Public QA and multiple-choice sets", "yaml")[0])
    h = load_config(cfg).harness
    assert h.dataset_path(h.datasets.crag) == Path("/data/my-sets/my-support-qa")
    assert h.dataset_path(h.datasets.ret) == Path("/elsewhere/my-mcq-qa")
    assert h.datasets.retrieval == ["my-support-qa"] and h.datasets.negatives == ["freshqa", "simpleqa"]
    assert h.dataset_path(h.datasets.kb) == Path("/data/my-sets/my-kb")


@pytest.mark.unit
def test_index_uri_config_loads_as_written(tmp_path: Path):
    """The README's object-store index settings validate; each dataset's database lies under the URI."""
    from harness.config import load_config

    (cfg := tmp_path / "rag-harness.yaml").write_text(
        _blocks("Scale: streaming ingestion, ANN with its recall, and Ray", "yaml")[0])
    h = load_config(cfg).harness
    assert h.index_uri == "s3://my-bucket/rag-harness/indexes"
    assert h.index_storage_options == {"region": "eu-west-1"}
    assert str(h.index_db("cranfield")) == "s3://my-bucket/rag-harness/indexes/cranfield"


@pytest.mark.unit
def test_every_readme_block_is_run_or_says_why_not():
    found = _all_blocks()
    assert set(found) == set(BLOCKS), f"README blocks without a test: {sorted(set(found) - set(BLOCKS))}; " \
                                      f"gone: {sorted(set(BLOCKS) - set(found))}"
    from tests import test_first_look, test_readme_examples_integration as integration

    named = {v for v in BLOCKS.values() if v.startswith("test_")}
    defined = set(globals()) | set(vars(integration)) | set(vars(test_first_look))
    assert named <= defined, f"tests named but missing: {sorted(named - defined)}"


def _run(cmd: str, cwd: Path, *, check: bool = True) -> Any:
    """The README's command as written, in `cwd` (its stdout; with check=False the finished process)."""
    import shlex
    import subprocess
    import sys

    args = shlex.split(cmd)
    assert args[0] in ("ragharness", "pytest")
    exe = [sys.executable, "-c", "import sys; from harness.cli import main; sys.exit(main())"] \
        if args[0] == "ragharness" else [sys.executable, "-m", "pytest"]
    proc = subprocess.run(exe + args[1:], cwd=cwd, capture_output=True, text=True, timeout=600)
    if not check:
        return proc
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return proc.stdout


@pytest.mark.integration
def test_techniques_command_runs():
    (cmd,) = _blocks("Techniques", "bash")[:1]
    out = _run(cmd.strip(), ROOT)
    for name in ("dense", "hyde", "crag", "rag-fusion", "query-rewriting", "wsop", "e2-standard", "ret"):
        assert f"\n{name}: " in "\n" + out


@pytest.mark.integration
def test_techniques_python_example_prints_what_it_says(pytester: pytest.Pytester):
    code = _blocks("Techniques", "python")[0]
    repo_project(pytester)
    pytester.makepyfile(example=code)
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "example.py"], cwd=pytester.path, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    expected = re.search(r"print\(.*\)\s*#\s*(.+)", code).group(1).strip()
    assert proc.stdout.strip() == expected


@pytest.mark.integration
def test_verdicts_snippet_runs(pytester: pytest.Pytester):
    snippet = _blocks("Verdicts", "python")[0]
    repo_project(pytester)
    body = "\n".join("    " + line for line in snippet.splitlines())
    pytester.makepyfile(test_verdicts=(
        "import numpy as np\n"
        "rng = np.random.default_rng(3)\n"
        "dense_recall = rng.uniform(0.2, 0.8, 40)\n"
        "hyde_recall = np.clip(dense_recall + rng.normal(0.1, 0.05, 40), 0, 1)\n"
        "base_correct = (rng.uniform(size=40) < 0.5).astype(float)\n"
        "ret_correct = np.maximum(base_correct, (rng.uniform(size=40) < 0.3).astype(float))\n"
        "abstained_on_negatives = [1] * 30 + [0] * 2\n\n"
        "def test_readme_verdicts(rag_check):\n" + body + "\n"))
    result = pytester.runpytest_subprocess("--spec-coverage", "off", "--report-dir", "out")
    assert "Error" not in result.stdout.str(), result.stdout.str()[-3000:]
    checks = json.loads((pytester.path / "out" / "results.json").read_text())["checks"]
    verdicts = {c["spec_id"]: c["verdict"] for c in checks}
    assert set(verdicts) == {"HYDE-003", "RET-GATE-1", "E2E4-FR6-3"}
    assert set(verdicts.values()) <= {"supported", "refuted", "inconclusive"}, verdicts


@pytest.mark.integration
def test_trec_eval_command_runs():
    out = _run(_blocks("TREC runs out and in", "bash")[0].strip(), ROOT)
    assert "judged queries" in out and re.search(r"nDCG@10\s+\d\.\d{4}\s+baseline \d\.\d{4}", out)
