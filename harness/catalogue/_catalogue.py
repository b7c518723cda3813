"""The spec catalogue: every testable assertion of the protocol as data, loaded and validated from YAML."""
from __future__ import annotations

import math
import operator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

import yaml

from harness import fast_yaml
from harness.stats._verdict import DIRECTIONAL, RULES, TESTS, Comparator, Decision

TIERS = ("unit", "integration", "benchmark")
REQUIRED_KEYS = ("id", "title", "marker", "metric", "comparator", "threshold", "source")
OPTIONAL_KEYS = ("expected", "note", "issue", "decision", "control", "kind", "dataset", "min_n")
KINDS = ("claim", "property")
DECISION_KEYS = ("rule", "test", "alpha", "confidence")

_COMPARATORS: dict[Comparator, Callable[[Any, Any], bool]] = {
    ">=": operator.ge,
    ">": operator.gt,
    "<=": operator.le,
    "<": operator.lt,
    "==": operator.eq,
    "!=": operator.ne,
    "in": lambda v, t: v in t,
    "between": lambda v, t: t[0] <= v <= t[1],
}


class CatalogueError(ValueError):
    """A catalogue file is malformed; the message names the file, the spec id and the field."""


@dataclass(frozen=True)
class Spec:
    """One testable assertion: measured `metric` must satisfy `comparator threshold`."""

    id: str
    title: str
    marker: str
    metric: str
    comparator: Comparator
    threshold: Any
    source: str
    expected: str = ""
    note: str = ""
    issue: int | None = None
    decision: Decision = field(default_factory=Decision)
    control: str = ""
    kind: str = "claim"
    # the set(s) the claim is measured on by default (a folder of the data directory, or `retail_kb`, the shipped
    # KB); the dataset a check actually used is in its context
    dataset: tuple[str, ...] = ()
    # the fewest items (queries) the claim may be decided on: a pass or supported verdict measured on fewer reads
    # inconclusive, with min_n as the items needed (harness.stats._verdict.below_min_n)
    min_n: int | None = None
    file: str = field(default="", compare=False)

    def holds(self, value: Any) -> bool:
        """Whether a measured value satisfies this spec (NaN never does)."""
        if isinstance(value, float) and math.isnan(value):
            return False
        return bool(_COMPARATORS[self.comparator](value, self.threshold))

    @property
    def condition(self) -> str:
        return f"{self.metric} {self.comparator} {self.threshold!r}"

    @property
    def comparative(self) -> bool:
        """Decided by an interval or a test (three-valued verdict), not by the point estimate."""
        return self.decision.comparative


class Catalogue:
    """All specs by id, in file order; `project_ids` are those of the project's own files (all, by default)."""

    def __init__(self, specs: Iterable[Spec], project_ids: Iterable[str] | None = None):
        self._specs: dict[str, Spec] = {}
        for s in specs:
            self._specs[s.id] = s
        self._project = set(self._specs) if project_ids is None else set(project_ids)

    def __getitem__(self, spec_id: str) -> Spec:
        try:
            return self._specs[spec_id]
        except KeyError:
            raise KeyError(f"unknown spec id {spec_id!r}; the catalogue has no such id") from None

    def __contains__(self, spec_id: object) -> bool:
        return spec_id in self._specs

    def __iter__(self):
        return iter(self._specs.values())

    def __len__(self) -> int:
        return len(self._specs)

    def ids(self, marker: str | None = None) -> list[str]:
        return [s.id for s in self if marker is None or s.marker == marker]

    def nearest(self, spec_id: str, cutoff: float = 0.6) -> str | None:
        """The catalogue id closest to an unknown one (difflib's ratio at least `cutoff`), for a "did you mean"."""
        from difflib import get_close_matches

        near = get_close_matches(str(spec_id), self.ids(), n=1, cutoff=cutoff)
        return near[0] if near else None

    def in_project(self, spec_id: str) -> bool:
        """Whether the spec comes from the project's own catalogue files (coverage and the report's not-run rows
        are about these; the protocol's catalogue is there to bind, not to answer for)."""
        return spec_id in self._project


def _validate_entry(entry: Any, path: Path, index: int) -> Spec:
    where = f"{path}: entry #{index + 1}"
    if not isinstance(entry, dict):
        raise CatalogueError(f"{where}: expected a mapping, got {type(entry).__name__}")
    sid = entry.get("id")
    if sid:
        where = f"{path}: spec {sid}"
    unknown = sorted(set(entry) - set(REQUIRED_KEYS) - set(OPTIONAL_KEYS))
    if unknown:
        raise CatalogueError(f"{where}: unknown key(s) {', '.join(unknown)}")
    for key in REQUIRED_KEYS:
        if key not in entry or entry[key] is None or entry[key] == "":
            raise CatalogueError(f"{where}: missing field '{key}'")
    if not isinstance(sid, str):
        raise CatalogueError(f"{where}: field 'id' must be a string")
    if entry["marker"] not in TIERS:
        raise CatalogueError(f"{where}: field 'marker' is {entry['marker']!r}, expected one of {', '.join(TIERS)}")
    comp = entry["comparator"]
    if comp not in _COMPARATORS:
        raise CatalogueError(
            f"{where}: field 'comparator' is {comp!r}, expected one of {', '.join(_COMPARATORS)}"
        )
    thr = entry["threshold"]
    if comp == "between" and not (isinstance(thr, list) and len(thr) == 2):
        raise CatalogueError(f"{where}: field 'threshold' must be [low, high] for comparator 'between'")
    if comp == "in" and not isinstance(thr, list):
        raise CatalogueError(f"{where}: field 'threshold' must be a list for comparator 'in'")
    if comp in (">=", ">", "<=", "<") and not isinstance(thr, (int, float)):
        raise CatalogueError(f"{where}: field 'threshold' must be a number for comparator {comp!r}")
    kind = entry.get("kind", "claim")
    if kind not in KINDS:
        raise CatalogueError(f"{where}: field 'kind' is {kind!r}, expected one of {', '.join(KINDS)}")
    if kind == "property" and not entry.get("note"):
        raise CatalogueError(f"{where}: field 'note' must say why a 'property' spec cannot fail")
    if kind == "property" and entry.get("control"):
        raise CatalogueError(f"{where}: field 'control' is for claims; a 'property' cannot fail by definition")
    if "control" in entry and not (isinstance(entry["control"], str) and entry["control"]):
        raise CatalogueError(f"{where}: field 'control' must name a registered negative control")
    ds = entry.get("dataset", [])
    ds = [ds] if isinstance(ds, str) else ds
    if not isinstance(ds, list) or not all(isinstance(d, str) and d for d in ds):
        raise CatalogueError(f"{where}: field 'dataset' must be a dataset name or a list of names")
    min_n = entry.get("min_n")
    if min_n is not None and (not isinstance(min_n, int) or isinstance(min_n, bool) or min_n < 1):
        raise CatalogueError(f"{where}: field 'min_n' must be a positive integer (the fewest items), got {min_n!r}")
    fields = {k: entry[k] for k in REQUIRED_KEYS + OPTIONAL_KEYS if k in entry}
    fields["dataset"] = tuple(ds)
    if "decision" in entry:
        fields["decision"] = _decision(entry["decision"], where, comp)
    elif entry["marker"] == "benchmark":
        raise CatalogueError(f"{where}: missing field 'decision' (benchmark specs declare how their verdict is decided: "
                             "ci, estimate, or {rule: test, test: NAME, alpha: A})")
    return Spec(**fields, file=str(path))


def _decision(raw: Any, where: str, comparator: Comparator) -> Decision:
    """Parse `decision: ci|estimate` or `decision: {rule: test, test: mcnemar, alpha: 0.15[, confidence: 0.95]}`."""
    if isinstance(raw, str):
        raw = {"rule": raw}
    if not isinstance(raw, dict):
        raise CatalogueError(f"{where}: field 'decision' must be a rule name or a mapping, got {type(raw).__name__}")
    unknown = sorted(set(raw) - set(DECISION_KEYS))
    if unknown:
        raise CatalogueError(f"{where}: field 'decision' has unknown key(s) {', '.join(unknown)}")
    rule = raw.get("rule")
    if rule not in RULES:
        raise CatalogueError(f"{where}: field 'decision.rule' is {rule!r}, expected one of {', '.join(RULES)}")
    test = raw.get("test")
    if rule == "test" and test not in TESTS:
        raise CatalogueError(f"{where}: field 'decision.test' is {test!r}, expected one of {', '.join(TESTS)}")
    if rule != "test" and test is not None:
        raise CatalogueError(f"{where}: field 'decision.test' is only for rule 'test'")
    for key, default in (("alpha", 0.05), ("confidence", 0.95)):
        v = raw.get(key, default)
        if not isinstance(v, (int, float)) or isinstance(v, bool) or not 0 < v < 1:
            raise CatalogueError(f"{where}: field 'decision.{key}' must be a number in (0, 1), got {v!r}")
    if rule != "estimate" and comparator not in DIRECTIONAL:
        raise CatalogueError(f"{where}: field 'decision' is {rule!r} but comparator {comparator!r} has no direction; "
                             f"an interval or a test decides only {', '.join(DIRECTIONAL)}")
    return Decision(rule, test, float(raw.get("alpha", 0.05)), float(raw.get("confidence", 0.95)))


def spec_files(paths: Iterable[str | Path]) -> list[Path]:
    """Expand directories to their `*.yaml` files (sorted); keep files as given."""
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            out.extend(sorted(p.glob("*.yaml")))
        elif p.exists():
            out.append(p)
        else:
            raise CatalogueError(f"{p}: spec file not found")
    return out


def load_catalogue(paths: Iterable[str | Path]) -> Catalogue:
    """Load and validate spec files; duplicate ids across files are an error naming both files."""
    return Catalogue(_load(spec_files(paths)))


def _load(files: Iterable[Path], protocol: frozenset[Path] = frozenset()) -> list[Spec]:
    seen: dict[str, Spec] = {}
    for path in files:
        try:
            data = fast_yaml.safe_load(path.read_text(encoding="utf-8"))
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            line = f" line {mark.line + 1}" if mark else ""
            raise CatalogueError(f"{path}:{line} invalid YAML: {exc}") from None
        if data is None:
            continue
        entries = data.get("specs") if isinstance(data, dict) else None
        if not isinstance(entries, list):
            raise CatalogueError(f"{path}: expected a top-level 'specs:' list")
        for i, entry in enumerate(entries):
            spec = _validate_entry(entry, path, i)
            if spec.id in seen:
                first = seen[spec.id].file
                whose = ", the protocol's catalogue that ships with rag-harness" if Path(first) in protocol else ""
                raise CatalogueError(f"{path}: spec {spec.id}: duplicate id (first defined in {first}{whose})")
            seen[spec.id] = spec
    return list(seen.values())


PROTOCOL_CATALOGUE = Path(__file__).resolve().parent  # the protocol's claims: the YAML beside this module


def load_project_catalogue(paths: Iterable[str | Path]) -> Catalogue:
    """The protocol's catalogue (`harness/catalogue/*.yaml`, shipped in the package) with the project's own spec
    files added; a project file that is one of the protocol's (this repository names them) is read once, and an
    id defined twice is an error naming both files."""
    protocol = [p.resolve() for p in spec_files([PROTOCOL_CATALOGUE])]
    own = [p.resolve() for p in spec_files(paths)]
    specs = _load(protocol + [p for p in own if p not in protocol], frozenset(protocol))
    own_files = {str(p) for p in own}
    return Catalogue(specs, project_ids=[s.id for s in specs if s.file in own_files])
