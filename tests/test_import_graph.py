"""The import graph of the `harness` package (issue #39 item 1): no circle among its modules, and imports follow
the layering the docs describe. The graph is read from the source (ast), imports inside functions included (they
are where the circles of the past hid), relative imports resolved; `importlib.import_module("...")` with a literal
name counts as an import. Importing a submodule is not counted as importing its parent package (as in grimp and
import-linter): a package's `__init__` that imports its submodules, which import their siblings, is no circle."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

import harness

LIBRARY = Path(harness.__file__).resolve().parent

# (importers allowed, prefix imported): only the pytest-facing layers import the pytest layer
PLUGIN_USERS = ("harness.plugin", "harness.protocol", "harness.first_look")
# the core (statistics, metrics, types, configuration) imports no technique, store or report module
CORE = ("harness.stats", "harness.metrics", "harness.types", "harness.config", "harness.config_models")
ABOVE_CORE = ("harness.techniques", "harness.retrieval.index", "harness.report")
# known exceptions to the layering, each `importer -> imported` with the reason it stays: none since the E4 reasoning
# detectors and the content-word set moved to harness/metrics/ (issue #39 item 2)
KNOWN: dict[str, str] = {}


def _within(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def module_names(root: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every module of the package at `root` (a folder named like the package)."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root.parent).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def _names(node: ast.AST, module: str, is_package: bool) -> list[tuple[str, str | None]]:
    """(base, name) pairs an import statement in `module` names: `import a.b` -> (a.b, None), `from a import b`
    -> (a, b); relative bases resolved against the importing module's package."""
    if isinstance(node, ast.Import):
        return [(a.name, None) for a in node.names]
    if isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            package = module.split(".") if is_package else module.split(".")[:-1]
            package = package[:len(package) - (node.level - 1)]
            base = ".".join(package + ([base] if base else []))
        return [(base, a.name) for a in node.names]
    if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) == "import_module":
        return [(a.value, None) for a in node.args[:1] if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    return []


def _resolve(name: str, known: dict[str, Path]) -> str | None:
    """The longest prefix of `name` that is a module of the package (None outside it)."""
    parts = name.split(".")
    for n in range(len(parts), 0, -1):
        if ".".join(parts[:n]) in known:
            return ".".join(parts[:n])
    return None


def import_graph(root: Path) -> dict[str, set[str]]:
    """Module -> the package's modules it imports anywhere in its file (`from a import b` names the module a.b
    where there is one, else a)."""
    known = module_names(root)
    graph: dict[str, set[str]] = {}
    for module, path in known.items():
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            for base, name in _names(node, module, path.name == "__init__.py"):
                target = (f"{base}.{name}" if name and f"{base}.{name}" in known else None) or _resolve(base, known)
                if target and target != module:
                    edges.add(target)
        graph[module] = edges
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle as a path `[a, b, ..., a]`, or None when the graph has none (iterative depth-first search)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    for start in sorted(graph):
        if state.get(start):
            continue
        path, stack = [start], [iter(sorted(graph[start]))]
        state[start] = 1
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                stack.pop()
            elif state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            elif not state.get(nxt):
                state[nxt] = 1
                path.append(nxt)
                stack.append(iter(sorted(graph.get(nxt, ()))))
    return None


def layering_violations(graph: dict[str, set[str]], package: str = "harness") -> list[str]:
    """`importer -> imported` for every import against the layering (the rules above, for `package`)."""
    users = tuple(p.replace("harness", package, 1) for p in PLUGIN_USERS)
    core = tuple(p.replace("harness", package, 1) for p in CORE)
    above = tuple(p.replace("harness", package, 1) for p in ABOVE_CORE)
    plugin = (f"{package}.plugin",)
    bad = []
    for importer, targets in sorted(graph.items()):
        for target in sorted(targets):
            if (_within(target, plugin) and not _within(importer, users)) or \
                    (_within(importer, core) and _within(target, above)):
                bad.append(f"{importer} -> {target}")
    return bad


def _plant(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root / "harness"


@pytest.mark.unit
def test_the_checker_flags_a_planted_cycle_hidden_in_a_function(tmp_path: Path):
    pkg = _plant(tmp_path, {
        "harness/__init__.py": "",
        "harness/index/__init__.py": "from harness.index.store import Store\n",  # a package importing its own: fine
        "harness/index/store.py": "def index():\n    from .ingest import ingest\n",
        "harness/index/ingest.py": "def ingest():\n    from harness.index import rows\n    import harness.index.store\n",
        "harness/index/rows.py": "import json\n",
    })
    graph = import_graph(pkg)
    assert graph["harness.index.store"] == {"harness.index.ingest"}
    assert graph["harness.index.ingest"] == {"harness.index.rows", "harness.index.store"}
    assert find_cycle(graph) == ["harness.index.store", "harness.index.ingest", "harness.index.store"]
    (pkg / "index" / "ingest.py").write_text("def ingest():\n    from harness.index import rows\n")
    assert find_cycle(import_graph(pkg)) is None


@pytest.mark.unit
def test_the_checker_flags_planted_layering_violations(tmp_path: Path):
    pkg = _plant(tmp_path, {
        "harness/__init__.py": "",
        "harness/plugin/__init__.py": "",
        "harness/plugin/hooks.py": "from harness.report import html\n",  # the plugin may import anything
        "harness/protocol/test_x.py": "from harness.plugin import hooks\n",  # allowed
        "harness/report/__init__.py": "", "harness/report/html/page.py": "",
        "harness/techniques/__init__.py": "", "harness/techniques/hyde.py": "",
        "harness/stats/__init__.py": "", "harness/stats/_effect.py": "import math\n",
        "harness/metrics/__init__.py": "def f():\n    from ..techniques import hyde\n",
        "harness/types.py": "import importlib\nimportlib.import_module('harness.report.html.page')\n",
        "harness/runner.py": "from harness.plugin.hooks import x\n",
    })
    assert layering_violations(import_graph(pkg)) == [
        "harness.metrics -> harness.techniques.hyde", "harness.runner -> harness.plugin.hooks",
        "harness.types -> harness.report.html.page"]


@pytest.mark.unit
def test_the_graph_reads_the_package():
    graph = import_graph(LIBRARY)
    assert len(graph) > 100 and "harness.techniques._registry" in graph["harness.techniques"]


@pytest.mark.unit
def test_no_import_cycle_among_the_modules():
    cycle = find_cycle(import_graph(LIBRARY))
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


@pytest.mark.unit
def test_imports_follow_the_layering():
    found = layering_violations(import_graph(LIBRARY))
    bad = [v for v in found if v not in KNOWN]
    assert bad == [], "imports against the layering:\n" + "\n".join(bad)
    assert set(KNOWN) <= set(found), f"fixed, so no longer exceptions: {sorted(set(KNOWN) - set(found))}"


@pytest.mark.unit
def test_the_registry_imports_no_technique():
    graph = import_graph(LIBRARY)
    techniques = {m for m in graph if m.startswith("harness.techniques.")} - {"harness.techniques._registry"}
    assert not graph["harness.techniques._registry"] & techniques
