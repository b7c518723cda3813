"""`harness.fast_yaml.safe_load`: the same data as PyYAML's `safe_load` on every YAML file the package ships, and
PyYAML's own error (message and line) on a text that is not YAML."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

import harness
from harness import fast_yaml

pytestmark = pytest.mark.unit
PACKAGE = Path(harness.__file__).resolve().parent
SHIPPED = sorted(PACKAGE.rglob("*.yaml"))


def test_the_package_ships_yaml_files():
    assert len(SHIPPED) >= 20, SHIPPED


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_the_same_data_as_pyyaml(path):
    text = path.read_text(encoding="utf-8")
    assert fast_yaml.safe_load(text) == yaml.safe_load(text)


@pytest.mark.parametrize("text", ["specs:\n  - id: X\n   title: y\n", "a: [1, 2\n", "a: b: c\n", "k: !!python/name:os.system\n"])
def test_an_error_is_pyyamls_own(text):
    with pytest.raises(yaml.YAMLError) as ours:
        fast_yaml.safe_load(text)
    with pytest.raises(yaml.YAMLError) as theirs:
        yaml.safe_load(text)
    assert type(ours.value) is type(theirs.value) and str(ours.value) == str(theirs.value)


def test_it_uses_libyaml_where_pyyaml_has_it(monkeypatch):
    """Where PyYAML was built with libyaml the fast parser is the one read (a parser that raises on everything is
    swapped in: the result then comes from the fallback, which shows the fast one was tried first)."""
    if not getattr(yaml, "__with_libyaml__", False):
        pytest.skip("this PyYAML was built without libyaml")
    assert fast_yaml._FAST is yaml.CSafeLoader
    tried = []

    class Refusing(yaml.CSafeLoader):
        def __init__(self, stream):
            tried.append(stream)
            raise yaml.YAMLError("refused")

    monkeypatch.setattr(fast_yaml, "_FAST", Refusing)
    assert fast_yaml.safe_load("a: 1\n") == {"a": 1} and tried == ["a: 1\n"]
