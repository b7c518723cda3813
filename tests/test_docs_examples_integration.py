"""The docs' examples that need the packaged embedder, run as a user would (integration tier)."""
from __future__ import annotations

import json

import pytest

from tests.docs_kit import blocks
from tests.pytester_kit import ROOT, repo_project

pytestmark = pytest.mark.integration
pytest_plugins = ["pytester"]
TECHNIQUES = "docs/techniques.md"
OWN_TECHNIQUE = "Your own technique against the existing claims"


def test_your_own_technique_runs_the_existing_claims(pytester: pytest.Pytester):
    """The techniques page's technique, registered in conftest.py, answers for HyDE's packaged claims
    (--rag-protocol) and the report names it (a small corpus stands in for the data directory)."""
    import shlex
    import shutil

    (conftest,) = blocks(TECHNIQUES, OWN_TECHNIQUE, "python")
    (cmd,) = blocks(TECHNIQUES, OWN_TECHNIQUE, "bash")
    repo_project(pytester)
    pytester.makeconftest(conftest)
    shutil.copytree(ROOT / "fixtures" / "mini", pytester.path / "data" / "mini")
    result = pytester.runpytest_subprocess(*shlex.split(cmd.strip())[1:], "--data-dir", "data", "--max-queries", "8",
                                           "--spec-coverage", "off", "--report-dir", "out")
    data = json.loads((pytester.path / "out" / "results.json").read_text())
    rows = {r["id"]: r for r in data["specs"]}
    assert set(rows) >= {"HYDE-003", "BENCH-HYDE-CONTRIEVER"}, result.stdout.str()[-3000:]
    for sid in ("HYDE-003", "BENCH-HYDE-CONTRIEVER"):
        assert rows[sid]["verdict"] in ("supported", "refuted", "inconclusive")
        assert rows[sid]["technique"] == "query-twice"
    assert data["provenance"]["techniques"]["hyde"]["technique"] == "query-twice"
    assert (pytester.path / "out" / "runs" / "mini-query-twice.run").is_file()


def test_using_it_in_your_project_example_runs(tmp_path):
    """The plugin as a fresh project sees it: the test_hyde.py of the README (the same as the docs page's) and its
    command, nothing else (no ini, no catalogue, no configuration): the protocol's HYDE-002 binds from the installed
    package, the packaged embedder and the scripted LLM answer, and the report holds that one spec."""
    from tests.test_docs_examples import _run

    (code,), (cmd,) = blocks("README.md", "In your own project", "python"), blocks("README.md", "In your own project",
                                                                                   "bash")
    page = "docs/your-project.md", "A claim of your own"
    assert (code, cmd) == (blocks(*page, "python")[0], blocks(*page, "bash")[0]), \
        "the README's example and the docs page's differ: keep them one example"
    (tmp_path / "test_hyde.py").write_text(code)
    out = _run(cmd.strip(), tmp_path)
    assert "1 passed" in out, out[-2000:]
    rows = json.loads((tmp_path / "reports" / "results.json").read_text())["specs"]
    assert [(r["id"], r["verdict"], r["tier"]) for r in rows] == [("HYDE-002", "pass", "integration")]
    assert (tmp_path / "reports" / "index.html").is_file()


def test_estimate_cost_command_runs(tmp_path):
    """The live-APIs page's `--estimate-cost`, as written, from the repository root: the E2-E4 study through the
    stand-in (real embedder and reranker, no call made), one row per experiment, priced from litellm's map.
    It runs in a copy of the project whose vector cache is its own: the runner encodes in batches of 100, and
    vectors it caches would differ in the last bits from those the recorded tests computed in one batch."""
    import re

    import yaml

    from tests.test_docs_examples import _run

    config = yaml.safe_load((ROOT / "wsop.yaml").read_text())
    config["harness"]["cache_dir"] = str(tmp_path / "cache")
    (tmp_path / "wsop.yaml").write_text(yaml.safe_dump(config))
    (tmp_path / "fixtures").symlink_to(ROOT / "fixtures")
    out = _run(blocks("docs/live-apis.md", "Cost before a run", "bash")[0].strip(), tmp_path)
    assert "cost estimate for openai/gpt-4o-mini" in out and "no call was made" in out
    assert "litellm cost map" in out
    for name in ("e2-standard", "e3-filtered", "e4-reasoning"):
        m = re.search(rf"^{name}\s+(\d+)\s+([\d,]+)\s+([\d,]+)\s+(\d+\.\d+)$", out, flags=re.M)
        assert m and int(m.group(1)) >= 150 and float(m.group(4)) > 0, out
