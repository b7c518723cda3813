from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.catalogue import PROTOCOL_CATALOGUE, CatalogueError, load_catalogue, load_project_catalogue, spec_files

SPECS = PROTOCOL_CATALOGUE


@pytest.mark.unit
def test_project_catalogue_has_every_protocol_id():
    cat = load_catalogue([SPECS])
    ids = set(cat.ids())
    expected = ({f"HYDE-00{i}" for i in range(1, 6)} | {f"CRAG-00{i}" for i in range(1, 7)}
                | {f"RAGF-00{i}" for i in range(1, 7)} | {f"QRW-00{i}" for i in range(1, 7)}
                | {f"WSOP-00{i}" for i in range(1, 9)}
                | {"BENCH-HYDE-CONTRIEVER"}
                | {f"RET-UNIT-{c}" for c in "abcdef"} | {f"RET-GATE-{i}" for i in range(1, 7)})
    assert expected <= ids
    for fr in range(1, 11):
        assert any(i.startswith(f"E2E4-FR{fr}-") for i in ids), fr
    assert sum(i.startswith("E2E4-NFR-") for i in ids) == 7
    assert not {"BENCH-CRAG-POPQA", "BENCH-RAGF-LATENCY"} & ids, "one measurement, one spec (CRAG-005, RAGF-006)"


def _write(tmp_path: Path, body: str, name: str = "a.yaml") -> Path:
    p = tmp_path / name
    p.write_text(body)
    return p


GOOD = """
specs:
  - id: X-1
    title: t
    marker: unit
    metric: m
    comparator: "<"
    threshold: 1
    source: s
"""


@pytest.mark.unit
def test_unknown_key_names_file_and_id(tmp_path: Path):
    p = _write(tmp_path, GOOD + "    colour: red\n")
    with pytest.raises(CatalogueError, match=r"a.yaml: spec X-1: unknown key\(s\) colour"):
        load_catalogue([p])


@pytest.mark.unit
def test_duplicate_id_names_both_files(tmp_path: Path):
    _write(tmp_path, GOOD, "a.yaml")
    _write(tmp_path, GOOD, "b.yaml")
    with pytest.raises(CatalogueError, match=r"b.yaml: spec X-1: duplicate id \(first defined in .*a.yaml\)"):
        load_catalogue([tmp_path])


@pytest.mark.unit
def test_bad_comparator_and_marker(tmp_path: Path):
    with pytest.raises(CatalogueError, match="field 'comparator' is '=<'"):
        load_catalogue([_write(tmp_path, GOOD.replace('"<"', '"=<"'))])
    with pytest.raises(CatalogueError, match="field 'marker' is 'smoke'"):
        load_catalogue([_write(tmp_path, GOOD.replace("unit", "smoke"))])


@pytest.mark.unit
def test_missing_field_and_type_checks(tmp_path: Path):
    with pytest.raises(CatalogueError, match="spec X-1: missing field 'source'"):
        load_catalogue([_write(tmp_path, GOOD.replace("    source: s\n", ""))])
    with pytest.raises(CatalogueError, match="must be a number"):
        load_catalogue([_write(tmp_path, GOOD.replace("threshold: 1", "threshold: high"))])


@pytest.mark.unit
def test_holds_semantics(tmp_path: Path):
    cat = load_catalogue([_write(tmp_path, GOOD)])
    s = cat["X-1"]
    assert s.holds(0.5) and not s.holds(1) and not s.holds(float("nan"))
    with pytest.raises(KeyError, match="unknown spec id 'X-2'"):
        cat["X-2"]


def _one(tmp_path: Path, body: str) -> Path:
    p = tmp_path / "c.yaml"
    p.write_text("specs:\n  - id: B-1\n    title: t\n    metric: m\n    source: s\n" + body)
    return p


@pytest.mark.unit
@pytest.mark.parametrize("body, message", [
    ("    marker: benchmark\n    comparator: '>='\n    threshold: 0.1\n", "missing field 'decision'"),
    ("    marker: benchmark\n    decision: vibes\n    comparator: '>='\n    threshold: 0.1\n",
     "field 'decision.rule' is 'vibes'"),
    ("    marker: benchmark\n    decision: {rule: test}\n    comparator: '>='\n    threshold: 0.1\n",
     "field 'decision.test' is None"),
    ("    marker: benchmark\n    decision: {rule: test, test: mcnemar, alpha: 1.5}\n    comparator: '>='\n"
     "    threshold: 0.1\n", "field 'decision.alpha' must be a number in (0, 1)"),
    ("    marker: benchmark\n    decision: ci\n    comparator: '=='\n    threshold: 0.1\n",
     "comparator '==' has no direction"),
    ("    marker: benchmark\n    decision: {rule: ci, tail: left}\n    comparator: '>='\n    threshold: 0.1\n",
     "field 'decision' has unknown key(s) tail"),
])
def test_decision_field_is_validated(tmp_path: Path, body: str, message: str):
    p = _one(tmp_path, body)
    with pytest.raises(CatalogueError, match=re.escape(f"{p}: spec B-1: ") + ".*" + re.escape(message)):
        load_catalogue([p])


@pytest.mark.unit
def test_decision_defaults_and_parses(tmp_path: Path):
    p = _one(tmp_path, "    marker: benchmark\n    decision: {rule: test, test: mcnemar, alpha: 0.15}\n"
                       "    comparator: '>='\n    threshold: 0.04\n")
    spec = load_catalogue([p])["B-1"]
    assert spec.comparative and (spec.decision.rule, spec.decision.test, spec.decision.alpha) == ("test", "mcnemar", 0.15)
    p = _one(tmp_path, "    marker: unit\n    comparator: '>='\n    threshold: 0.04\n")
    assert load_catalogue([p])["B-1"].decision.rule == "estimate"


@pytest.mark.unit
def test_every_project_benchmark_spec_declares_its_decision():
    cat = load_catalogue([SPECS])
    comparative = {s.id for s in cat if s.comparative}
    assert {"HYDE-003", "QRW-003", "RAGF-004", "CRAG-005", "BENCH-HYDE-CONTRIEVER", "E2E4-FR5-3",
            "RET-GATE-1"} <= comparative
    assert cat["RET-GATE-1"].decision.test == "mcnemar" and cat["RET-GATE-1"].decision.alpha == 0.15


@pytest.mark.integration
def test_public_api_names_resolve_lazily():
    import subprocess
    import sys

    import harness

    assert all(getattr(harness, name) is not None for name in harness.__all__)
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        harness.nope  # noqa: B018
    code = "import sys, harness; print(any(m in sys.modules for m in ('lancedb', 'torch', 'litellm')))"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "False"


@pytest.mark.unit
def test_dataset_field_takes_a_name_or_a_list_and_nothing_else(tmp_path: Path):
    one = load_catalogue([_write(tmp_path, GOOD + "    dataset: halueval-qa\n")])
    assert one["X-1"].dataset == ("halueval-qa",)
    two = load_catalogue([_write(tmp_path, GOOD + "    dataset: [cranfield, halueval-qa]\n", "b.yaml")])
    assert two["X-1"].dataset == ("cranfield", "halueval-qa")
    with pytest.raises(CatalogueError, match=r"c.yaml: spec X-1: field 'dataset' must be a dataset name or a list"):
        load_catalogue([_write(tmp_path, GOOD + "    dataset: 3\n", "c.yaml")])


@pytest.mark.unit
def test_claims_moved_to_public_sets_name_them_in_their_rows():
    cat = load_catalogue(spec_files([SPECS]))
    assert cat["CRAG-005"].dataset == ("halueval-qa",)
    assert all(cat[f"RET-GATE-{i}"].dataset == ("halueval-qa",) for i in range(1, 7))
    assert cat["E2E4-FR6-3-PUBLIC"].dataset == ("freshqa", "simpleqa")
    assert "halueval-qa" in cat["QRW-003"].dataset


@pytest.mark.unit
def test_a_projects_specs_are_added_to_the_protocols(tmp_path: Path):
    """The plugin's catalogue: the shipped protocol's specs and the project's own, only the latter the project's
    to answer for (coverage, not-run rows)."""
    protocol = load_catalogue([SPECS])
    cat = load_project_catalogue([_write(tmp_path, GOOD)])
    assert set(cat.ids()) == set(protocol.ids()) | {"X-1"} and len(cat) == len(protocol) + 1
    assert cat.in_project("X-1") and not cat.in_project("HYDE-002")
    assert [s.id for s in cat][-1] == "X-1"  # the protocol's first, in file order
    alone = load_project_catalogue([])
    assert len(alone) == len(protocol) and not any(alone.in_project(i) for i in alone.ids())


@pytest.mark.unit
def test_a_project_id_that_the_protocol_defines_names_both_files(tmp_path: Path):
    p = _write(tmp_path, GOOD.replace("X-1", "HYDE-002"), "mine.yaml")
    with pytest.raises(CatalogueError) as err:
        load_project_catalogue([p])
    message = str(err.value)
    assert message.startswith(f"{p.resolve()}: spec HYDE-002: duplicate id (first defined in ")
    assert str((SPECS / "hyde.yaml").resolve()) in message and "the protocol's catalogue" in message


@pytest.mark.unit
def test_a_project_that_names_the_protocols_files_reads_them_once():
    """This repository's own ini names harness/specs: no duplicates, and every protocol id is its to cover."""
    cat = load_project_catalogue([SPECS])
    assert len(cat) == len(load_catalogue([SPECS])) and all(cat.in_project(i) for i in cat.ids())
    one = load_project_catalogue([SPECS / "hyde.yaml"])
    assert one.in_project("HYDE-002") and not one.in_project("CRAG-001")
