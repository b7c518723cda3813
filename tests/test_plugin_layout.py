"""The layout of the pytest-facing layer: the library never imports `harness.plugin`, and the controls split into
per-family modules (issue #31, item 7) are the ones registered before the split, with the same `breaks` text."""
from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

import harness
from harness.plugin.controls import CONTROLS

LIBRARY = Path(harness.__file__).resolve().parent
BEFORE_SPLIT = Path(__file__).with_name("controls_before_split.json")  # name -> breaks, from harness/controls.py


def _imported(node: ast.AST, module: str) -> list[str]:
    """The absolute module names an import statement in `module` (dotted) names."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:  # relative: resolve against the importing module's package
            package = module.split(".")[:-node.level]
            base = ".".join(package + ([base] if base else []))
        return [base, *(f"{base}.{a.name}" for a in node.names)]
    if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) == "import_module":
        return [a.value for a in node.args[:1] if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    return []


def plugin_imports(root: Path) -> list[str]:
    """`path: module` for every import of `harness.plugin` in a module under `root` (the `harness` package) that
    is not itself under `root/plugin`."""
    found = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        if rel.parts[0] == "plugin":
            continue
        module = ".".join(("harness", *rel.with_suffix("").parts))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            for name in _imported(node, module):
                if name == "harness.plugin" or name.startswith("harness.plugin."):
                    found.append(f"{rel}: {name}")
                    break
    return found


@pytest.mark.unit
def test_the_checker_flags_a_planted_import_of_the_plugin(tmp_path: Path):
    root = tmp_path / "harness"
    (root / "plugin").mkdir(parents=True)
    (root / "sub").mkdir()
    (root / "plugin" / "hooks.py").write_text("from harness.plugin.controls import control\n")  # allowed
    (root / "ok.py").write_text("from harness.report import controls\nimport harness.control_env\n")
    (root / "bad.py").write_text("def f():\n    from harness.plugin.controls import active_control\n")
    (root / "sub" / "rel.py").write_text("from .. import plugin\n")
    (root / "dyn.py").write_text("import importlib\nimportlib.import_module('harness.plugin.hooks')\n")
    assert plugin_imports(root) == ["bad.py: harness.plugin.controls", "dyn.py: harness.plugin.hooks",
                                    "sub/rel.py: harness.plugin"]


@pytest.mark.unit
def test_the_library_does_not_import_the_plugin_layer():
    assert plugin_imports(LIBRARY) == []


@pytest.mark.unit
def test_every_control_registered_before_the_split_is_registered_with_the_same_breaks():
    before = json.loads(BEFORE_SPLIT.read_text(encoding="utf-8"))
    assert len(before) == 103  # harness/controls.py on main before the split
    now = {name: c.breaks for name, c in CONTROLS.items()}
    assert {n: now.get(n) for n in before} == before


@pytest.mark.unit
def test_every_control_lives_in_a_family_module():
    homes = {c.apply.__module__ for c in CONTROLS.values()}
    assert not homes & {"harness.plugin.controls", "harness.plugin.controls.registry"}  # the registry registers none
    assert all(h.startswith("harness.plugin.controls.") for h in homes), homes
    families = {p.stem for p in (LIBRARY / "plugin" / "controls").glob("*.py") if p.stem not in ("__init__", "registry")}
    assert {h.rsplit(".", 1)[1] for h in homes} == families  # each family module registers something
