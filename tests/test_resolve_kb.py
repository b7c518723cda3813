"""`harness.datasets.kb`: a KB folder of the project's, or `retail_kb`, the synthetic KB written once under the
cache directory (byte for byte the repository's fixtures/retail_kb)."""
from __future__ import annotations

import filecmp
from pathlib import Path

import pytest

from harness.data.retail_kb import resolve_kb

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.unit
def test_retail_kb_is_generated_once_under_the_cache_and_equals_the_fixture(tmp_path: Path):
    kb = resolve_kb("retail_kb", tmp_path / "data", tmp_path / "cache")
    assert kb == tmp_path / "cache" / "retail_kb-seed42"
    cmp = filecmp.dircmp(kb, ROOT / "fixtures" / "retail_kb")
    assert not cmp.left_only and not cmp.right_only and not cmp.diff_files
    stamp = (kb / "queries.jsonl").stat().st_mtime_ns
    assert resolve_kb("retail_kb", tmp_path / "data", tmp_path / "cache") == kb
    assert (kb / "queries.jsonl").stat().st_mtime_ns == stamp  # not written again


@pytest.mark.unit
def test_a_kb_of_the_projects_own_is_used_as_named(tmp_path: Path):
    own = tmp_path / "data" / "retail_kb"
    own.mkdir(parents=True)
    (own / "structure.json").write_text("{}")
    assert resolve_kb("retail_kb", tmp_path / "data", tmp_path / "cache") == own  # the project's shadows ours
    assert resolve_kb("mine", tmp_path / "data", tmp_path / "cache") == tmp_path / "data" / "mine"
    assert not (tmp_path / "cache").exists()  # nothing generated for a name of the project's
