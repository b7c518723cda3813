"""The code blocks of README.md and docs/**/*.md, run as a new user would: in a fresh project outside the
repository, each file a page says to write holding exactly its block, and the command it gives run as written;
nothing else set up. Every block is run by a test or says why not (tests/docs_kit.py: the marker convention)."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.docs_kit import ROOT, Block, all_blocks, blocks, expected_prints, parse
from tests.pytester_kit import repo_project

pytest_plugins = ["pytester"]
YOUR_PROJECT = "docs/your-project.md"
CONTROLS = "docs/controls.md"


def _adding_a_spec(project: Path) -> str:
    """The files "Adding a spec" says to write, each exactly its block, in `project`; its command."""
    (catalogue,) = blocks(YOUR_PROJECT, "Adding a spec", "yaml")
    (test_code,) = blocks(YOUR_PROJECT, "Adding a spec", "python")
    (project / "specs").mkdir()
    (project / "specs" / "myteam.yaml").write_text(catalogue)
    (project / "test_myteam.py").write_text(test_code)
    (cmd,) = blocks(YOUR_PROJECT, "Adding a spec", "bash")
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
    """The controls page's conftest.py beside the "Adding a spec" project registers the control MYTEAM-001
    names (`mylib` is the user's own library, which the block imports: a stand-in with a `rerank`); without it
    the same run is a usage error naming the control."""
    cmd = _adding_a_spec(tmp_path)
    (tmp_path / "mylib.py").write_text("def rerank(query, hits):\n    return sorted(hits)\n")
    with_control = f"{cmd} --under-control my-reranker-keeps-input-order"
    proc = _run(with_control, tmp_path, check=False)
    assert proc.returncode == 4 and "unknown negative control" in proc.stderr, proc.stdout[-2000:] + proc.stderr
    (tmp_path / "conftest.py").write_text(blocks(CONTROLS, "Your own control", "python")[0])
    _run(with_control, tmp_path)
    rows = json.loads((tmp_path / "reports" / "results.json").read_text())["specs"]
    assert [(r["id"], r["verdict"]) for r in rows] == [("MYTEAM-001", "supported")]


@pytest.mark.integration
def test_a_project_id_the_protocol_has_is_an_error_naming_both_files(tmp_path: Path):
    """The promise beside "Adding a spec": a project spec reusing a protocol id stops the run."""
    cmd = _adding_a_spec(tmp_path)
    mine = tmp_path / "specs" / "myteam.yaml"
    mine.write_text(mine.read_text().replace("MYTEAM-001", "HYDE-002"))
    proc = _run(cmd, tmp_path, check=False)
    assert proc.returncode == 4, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert f"{mine.resolve()}: spec HYDE-002: duplicate id (first defined in " in proc.stderr
    assert f"{Path('harness', 'catalogue', 'hyde.yaml')}, the protocol's catalogue" in proc.stderr


# ---------------------------------------------------------------- every fenced block of the README and the docs
def _named_tests() -> set[str]:
    """The test functions a marker may name: this module's, the integration module's and the first look's."""
    from tests import test_docs_examples_integration as integration, test_first_look

    return {n for mod in (sys.modules[__name__], integration, test_first_look) for n in vars(mod)
            if n.startswith("test_")}


def _unaccounted(found: list[Block], named: set[str]) -> list[str]:
    """The blocks that are neither a Python script the generic test runs, nor skipped with a reason, nor run by a
    test that exists (a `tests/<file>.py::<test>` marker must name a file that defines it)."""
    bad = []
    for b in found:
        if b.marker is None:
            if b.lang != "python":
                bad.append(f"{b.id}: a {b.lang or 'plain'} block with no docs-test marker")
        elif b.skip_reason is not None:
            if not b.skip_reason:
                bad.append(f"{b.id}: skipped without a reason")
        elif "::" in b.runner:
            file, test = b.runner.split("::", 1)
            if not (ROOT / file).is_file() or f"def {test}(" not in (ROOT / file).read_text(encoding="utf-8"):
                bad.append(f"{b.id}: names {b.runner}, which does not exist")
        elif b.runner not in named:
            bad.append(f"{b.id}: names {b.runner}, which does not exist")
    return bad


@pytest.mark.unit
def test_every_block_is_run_or_says_why_not():
    found = all_blocks()
    assert len({b.path for b in found}) >= 10, "the docs pages were not found"
    bad = _unaccounted(found, _named_tests())
    assert not bad, "blocks no test runs:\n" + "\n".join(bad)


@pytest.mark.unit
def test_the_block_check_fails_on_an_unmarked_a_reasonless_and_a_dangling_block():
    """The check above, on a page written for it: each kind of unaccounted block is caught, the rest pass."""
    page = "\n".join([
        "# Page", "", "```bash", "echo unmarked", "```", "",
        "<!-- docs-test: skip: -->", "```yaml", "a: 1", "```", "",
        "## Section", "", "<!-- docs-test: test_nobody_wrote -->", "```bash", "echo dangling", "```", "",
        "<!-- docs-test: tests/test_docs_examples.py::test_nobody_wrote (a note) -->", "```bash", "x", "```", "",
        "1. Step:", "", "    <!-- docs-test: test_written -->", "    ```bash", "    echo fine", "    ```", "",
        "<!-- docs-test: skip: needs a key -->", "```text", "sample", "```", "",
        "```python", "print(1)  # 1", "```"])
    found = parse(page, "page.md")
    assert [(b.section, b.lang, b.index, b.line) for b in found] == [
        ("Page", "bash", 0, 3), ("Page", "yaml", 0, 8), ("Section", "bash", 0, 15), ("Section", "bash", 1, 20),
        ("Section", "bash", 2, 27), ("Section", "text", 0, 32), ("Section", "python", 0, 36)]
    assert found[4].code == "echo fine\n" and found[4].runner == "test_written"
    bad = _unaccounted(found, {"test_written"})
    assert [line.split(":")[1] for line in bad] == ["3", "8", "15", "20"], bad


@pytest.mark.unit
def test_a_block_says_what_it_prints():
    code = 'x = 2\nprint(x + 1)  # 3\nprint("a b")  # a b\nprint(x)\n'
    assert expected_prints(code) == ["3", "a b"]


PYTHON_BLOCKS = [b for b in all_blocks() if b.lang == "python" and b.marker is None]


@pytest.mark.integration
@pytest.mark.parametrize("block", PYTHON_BLOCKS, ids=[b.id for b in PYTHON_BLOCKS])
def test_python_block_runs(block: Block, tmp_path: Path):
    """The block as a script in a fresh folder (with `fixtures/` and `wsop.yaml` beside it, as in a clone), offline,
    warnings as errors; each `print(...)  # text` line prints exactly `text`."""
    (tmp_path / "fixtures").symlink_to(ROOT / "fixtures")
    shutil.copy(ROOT / "wsop.yaml", tmp_path / "wsop.yaml")
    (tmp_path / "example.py").write_text(block.code)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    proc = subprocess.run([sys.executable, "-W", "error", "example.py"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    expected = expected_prints(block.code)
    assert expected, f"{block.id}: a Python block prints what it shows (`print(...)  # text`)"
    assert proc.stdout.splitlines() == expected, proc.stdout


# ---------------------------------------------------------------- blocks run by a test of their own
@pytest.mark.unit
def test_your_corpus_config_is_the_user_projects(tmp_path: Path):
    """The configuration for a corpus of one's own validates and names the sets of fixtures/user_project, the
    project tests/test_user_project.py runs the protocol's claims in."""
    from harness.config import load_config

    (tmp_path / "rag.yaml").write_text(blocks(YOUR_PROJECT, "Your corpus, your model", "yaml")[0])
    page = load_config(tmp_path / "rag.yaml").harness
    project = load_config(ROOT / "fixtures" / "user_project" / "rag.yaml").harness
    assert (page.data_dir, page.datasets.retrieval, page.datasets.crag) == \
        (project.data_dir, project.datasets.retrieval, project.datasets.crag) == (Path("data"), ["bikeshop"], "bikeshop")


@pytest.mark.unit
def test_own_qa_set_config_loads_as_written(tmp_path: Path):
    """The per-family dataset settings validate, and each family resolves to the folder it names."""
    from harness.config import load_config

    (cfg := tmp_path / "rag-harness.yaml").write_text(blocks("docs/datasets.md", "Your own QA set", "yaml")[0])
    h = load_config(cfg).harness
    assert h.dataset_path(h.datasets.crag) == Path("/data/my-sets/my-support-qa")
    assert h.dataset_path(h.datasets.ret) == Path("/elsewhere/my-mcq-qa")
    assert h.datasets.retrieval == ["my-support-qa"] and h.datasets.negatives == ["freshqa", "simpleqa"]
    assert h.dataset_path(h.datasets.kb) == Path("/data/my-sets/my-kb")


@pytest.mark.unit
def test_index_uri_config_loads_as_written(tmp_path: Path):
    """The object-store index settings validate; each dataset's database lies under the URI."""
    from harness.config import load_config

    (cfg := tmp_path / "rag-harness.yaml").write_text(blocks("docs/scale.md", "Ray beyond one machine", "yaml")[0])
    h = load_config(cfg).harness
    assert h.index_uri == "s3://my-bucket/rag-harness/indexes"
    assert h.index_storage_options == {"region": "eu-west-1"}
    assert str(h.index_db("cranfield")) == "s3://my-bucket/rag-harness/indexes/cranfield"


@pytest.mark.unit
def test_configuration_example_loads_as_written(tmp_path: Path):
    """The configuration page's file sets exactly what it shows, and every other field keeps its default."""
    from harness.config import HarnessConfig, load_config

    (cfg := tmp_path / "rag.yaml").write_text(blocks("docs/configuration.md", "Configuration", "yaml")[0])
    config, default = load_config(cfg), HarnessConfig()
    assert (config.harness.max_queries, config.harness.llm.concurrency, config.wsop.hyde.temperature) == (50, 4, 0.5)
    changed = {k for k, v in config.model_dump().items() if v != default.model_dump()[k]}
    assert changed == {"harness", "wsop"}
    assert config.harness.llm.model == default.harness.llm.model and config.wsop.crag == default.wsop.crag


def _run(cmd: str, cwd: Path, *, check: bool = True) -> Any:
    """The page's command as written, in `cwd` (its stdout; with check=False the finished process)."""
    import shlex

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
    (cmd,) = blocks("docs/techniques.md", "Techniques", "bash")
    out = _run(cmd.strip(), ROOT)
    for name in ("dense", "hyde", "crag", "rag-fusion", "query-rewriting", "wsop", "e2-standard", "ret"):
        assert f"\n{name}: " in "\n" + out


@pytest.mark.integration
def test_verdicts_snippet_runs(pytester: pytest.Pytester):
    (snippet,) = blocks("docs/verdicts.md", "The decision rules", "python")[1:]
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
        "def test_docs_verdicts(rag_check):\n" + body + "\n"))
    result = pytester.runpytest_subprocess("--spec-coverage", "off", "--report-dir", "out")
    assert "Error" not in result.stdout.str(), result.stdout.str()[-3000:]
    checks = json.loads((pytester.path / "out" / "results.json").read_text())["checks"]
    verdicts = {c["spec_id"]: c["verdict"] for c in checks}
    assert set(verdicts) == {"HYDE-003", "RET-GATE-1", "E2E4-FR6-3"}
    assert set(verdicts.values()) <= {"supported", "refuted", "inconclusive"}, verdicts


@pytest.mark.integration
def test_trec_eval_command_runs():
    out = _run(blocks("docs/trec.md", "Runs out", "bash")[0].strip(), ROOT)
    assert "judged queries" in out and re.search(r"nDCG@10\s+\d\.\d{4}\s+baseline \d\.\d{4}", out)
