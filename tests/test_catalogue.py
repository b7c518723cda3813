from __future__ import annotations

from pathlib import Path

import pytest

from harness.catalogue import CatalogueError, load_catalogue

pytestmark = pytest.mark.unit
SPECS = Path(__file__).resolve().parents[1] / "specs"


def test_project_catalogue_has_every_protocol_id():
    cat = load_catalogue([SPECS])
    ids = set(cat.ids())
    expected = ({f"HYDE-00{i}" for i in range(1, 6)} | {f"CRAG-00{i}" for i in range(1, 7)}
                | {f"RAGF-00{i}" for i in range(1, 7)} | {f"QRW-00{i}" for i in range(1, 7)}
                | {f"WSOP-00{i}" for i in range(1, 9)}
                | {"BENCH-CRAG-POPQA", "BENCH-HYDE-CONTRIEVER", "BENCH-RAGF-LATENCY"}
                | {f"RET-UNIT-{c}" for c in "abcdef"} | {f"RET-GATE-{i}" for i in range(1, 7)})
    assert expected <= ids
    for fr in range(1, 11):
        assert any(i.startswith(f"E2E4-FR{fr}-") for i in ids), fr
    assert sum(i.startswith("E2E4-NFR-") for i in ids) == 7


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


def test_unknown_key_names_file_and_id(tmp_path: Path):
    p = _write(tmp_path, GOOD + "    colour: red\n")
    with pytest.raises(CatalogueError, match=r"a.yaml: spec X-1: unknown key\(s\) colour"):
        load_catalogue([p])


def test_duplicate_id_names_both_files(tmp_path: Path):
    _write(tmp_path, GOOD, "a.yaml")
    _write(tmp_path, GOOD, "b.yaml")
    with pytest.raises(CatalogueError, match=r"b.yaml: spec X-1: duplicate id \(first defined in .*a.yaml\)"):
        load_catalogue([tmp_path])


def test_bad_comparator_and_marker(tmp_path: Path):
    with pytest.raises(CatalogueError, match="field 'comparator' is '=<'"):
        load_catalogue([_write(tmp_path, GOOD.replace('"<"', '"=<"'))])
    with pytest.raises(CatalogueError, match="field 'marker' is 'smoke'"):
        load_catalogue([_write(tmp_path, GOOD.replace("unit", "smoke"))])


def test_missing_field_and_type_checks(tmp_path: Path):
    with pytest.raises(CatalogueError, match="spec X-1: missing field 'source'"):
        load_catalogue([_write(tmp_path, GOOD.replace("    source: s\n", ""))])
    with pytest.raises(CatalogueError, match="must be a number"):
        load_catalogue([_write(tmp_path, GOOD.replace("threshold: 1", "threshold: high"))])


def test_holds_semantics(tmp_path: Path):
    cat = load_catalogue([_write(tmp_path, GOOD)])
    s = cat["X-1"]
    assert s.holds(0.5) and not s.holds(1) and not s.holds(float("nan"))
    with pytest.raises(KeyError, match="unknown spec id 'X-2'"):
        cat["X-2"]
