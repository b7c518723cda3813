"""The docs against the code: the generated pages list every spec, configuration field, technique, control and
public name the code has; the code's pointers into the docs name pages (and sections) that exist; every plugin
option is on the options page; the README's links land; every measurement page says when, where and with what."""
from __future__ import annotations

import importlib
import importlib.util
import re
import unicodedata
from pathlib import Path
from types import ModuleType

import pytest
from pydantic import BaseModel, Field

pytestmark = pytest.mark.unit
ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def _pages_module() -> ModuleType:
    """docs/_gen/pages.py, the generator mkdocs loads as a hook."""
    spec = importlib.util.spec_from_file_location("docs_gen_pages", DOCS / "_gen" / "pages.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


PAGES = _pages_module()


def _row_ids(page: str) -> list[str]:
    """The anchors of a generated table's rows (`<span id="X"></span>` opening the first cell), in order."""
    return re.findall(r'^\| <span id="([^"]+)"></span>', page, flags=re.M)


def test_the_catalogue_page_lists_every_spec_once():
    from harness.catalogue import PROTOCOL_CATALOGUE, load_catalogue

    catalogue = load_catalogue([PROTOCOL_CATALOGUE])
    rows = _row_ids(PAGES.catalogue_page())
    assert sorted(rows) == sorted(catalogue.ids()) and len(rows) == len(catalogue)
    row = next(line for line in PAGES.catalogue_page().splitlines() if '<span id="HYDE-003">' in line)
    spec = catalogue["HYDE-003"]
    for part in (spec.marker, spec.metric, str(spec.threshold), spec.control, spec.source, "ci"):
        assert part in row, (part, row)


def test_the_configuration_page_lists_every_field_once():
    from harness.config import leaf_fields

    rows = _row_ids(PAGES.config_page())
    assert sorted(rows) == sorted(leaf_fields()) and len(set(rows)) == len(rows)
    row = next(line for line in PAGES.config_page().splitlines() if '<span id="wsop.hyde.temperature">' in line)
    assert "`float`" in row and "`0.7`" in row


def test_the_configuration_page_shows_each_fields_description_and_default():
    class Inner(BaseModel):
        depth: int = Field(default=3, description="how deep | it goes")

    class Outer(BaseModel):
        name: str = Field(default="x", description="the name")
        plain: float = 0.5
        inner: Inner = Field(default_factory=Inner)

    page = PAGES.config_page(Outer)
    rows = {r.split("</span>")[0].split('"')[1]: r for r in page.splitlines() if r.startswith("| <span id=")}
    assert set(rows) == {"name", "plain", "inner.depth"}
    assert rows["name"].endswith("| the name |") and "`'x'`" in rows["name"]
    assert rows["plain"].endswith("|  |") and "`0.5`" in rows["plain"]
    assert rows["inner.depth"].endswith("| how deep \\| it goes |") and "`3`" in rows["inner.depth"]
    assert "## `inner`" in page


def test_the_techniques_page_lists_every_technique_with_its_parameters():
    from harness.techniques import describe_params, technique_names

    page = PAGES.techniques_page()
    sections = re.split(r"^## ", page, flags=re.M)[1:]
    names = [s.split("\n", 1)[0].strip("`") for s in sections]
    assert names == technique_names()
    for name, section in zip(names, sections):
        params = re.findall(r"^\| `(\w+)` \|", section, flags=re.M)
        assert params == [p["name"] for p in describe_params(name)], name


def test_the_controls_page_lists_every_control_once():
    from harness.plugin.controls import CONTROLS

    page = PAGES.controls_page()
    rows = _row_ids(page)
    assert sorted(rows) == sorted(CONTROLS) and len(rows) == len(CONTROLS)
    row = next(line for line in page.splitlines() if '<span id="hyde-embeds-query">' in line)
    assert CONTROLS["hyde-embeds-query"].breaks.replace("|", "\\|") in row and "HYDE-002" in row


def test_the_api_page_documents_every_public_name_where_it_is_defined():
    import harness

    page = PAGES.api_page()
    targets = re.findall(r"^::: ([\w.]+)$", page, flags=re.M)
    assert [t.rsplit(".", 1)[1] for t in targets] == harness.__all__
    for target in targets:
        module, name = target.rsplit(".", 1)
        assert getattr(importlib.import_module(module), name) is getattr(harness, name), target
        assert f"`from harness import {name}`" in page


def test_the_hook_adds_every_generated_page_to_the_nav():
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert "docs/_gen/pages.py" in nav
    for path in PAGES.PAGES:
        assert f": {path}\n" in nav, path
        assert not (DOCS / path).exists(), f"{path} is generated: it must not also be written by hand"


# ---------------------------------------------------------------- pointers from the code, links from the README
_HEADING = re.compile(r"^#{1,6} (.+?)\s*$", re.M)
_POINTER = re.compile(r"docs/([\w./-]+\.md)(?:#([\w-]+))?")
# the files whose "README" is a dataset's README (a folder's card), not a pointer into the project's README
DATASET_README = {"harness/data/qa.py", "harness/data/retail_kb.py", "harness/data/experiment.py",
                  "harness/report/html/tables.py", "harness/catalogue/detect.yaml"}


def _slug(heading: str) -> str:
    """Python-Markdown's toc slug: ASCII, no punctuation, lower case, runs of spaces and hyphens as one hyphen."""
    text = re.sub(r"`|\*|\[|\]\([^)]*\)", "", heading)
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    return re.sub(r"[-\s]+", "-", re.sub(r"[^\w\s-]", "", text).strip().lower())


def _anchors(page: str) -> set[str]:
    return {_slug(h) for h in _HEADING.findall(page)} | set(re.findall(r'<span id="([^"]+)">', page))


def _exists(rel: str, anchor: str | None) -> bool:
    """Whether docs/`rel` is a page (written or generated) with the heading `anchor`, when one is given."""
    if rel in PAGES.PAGES:
        return anchor is None or anchor in _anchors(PAGES.PAGES[rel]())
    path = DOCS / rel
    return path.is_file() and (anchor is None or anchor in _anchors(path.read_text(encoding="utf-8")))


def _code_files() -> list[Path]:
    return sorted(p for p in (ROOT / "harness").rglob("*") if p.suffix in (".py", ".yaml") and p.is_file())


def test_every_pointer_from_the_code_into_the_docs_names_a_page_that_exists():
    pointers = [(p.relative_to(ROOT), m.group(1), m.group(2)) for p in _code_files()
                for m in _POINTER.finditer(p.read_text(encoding="utf-8"))]
    assert len(pointers) >= 10, pointers
    missing = [f"{where}: docs/{rel}" + (f"#{anchor}" if anchor else "") for where, rel, anchor in pointers
               if not _exists(rel, anchor)]
    assert not missing, "pointers to no page (or no such section):\n" + "\n".join(missing)


def test_the_pointer_check_catches_a_missing_page_and_a_missing_section():
    assert _exists("verdicts.md", "which-interval-which-test") and _exists("reference/catalogue.md", "HYDE-003")
    assert not _exists("verdict.md", None) and not _exists("verdicts.md", "which-interval")
    assert _slug("Sequential looks: a claim stops drawing queries once it is decided") == \
        "sequential-looks-a-claim-stops-drawing-queries-once-it-is-decided"
    assert _slug("The E2/E3/E4 study") == "the-e2e3e4-study" and _slug("`wsop.hyde`") == "wsophyde"


def test_no_code_points_into_the_readme():
    """The manual left the README: a comment or docstring that names the README points into the docs instead
    (a dataset's own README, the card of a data folder, is another thing)."""
    stale = [f"{p.relative_to(ROOT)}:{n}: {line.strip()}" for p in _code_files()
             if str(p.relative_to(ROOT)) not in DATASET_README
             for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if "README" in line]
    assert not stale, "\n".join(stale)


def test_every_readme_link_lands():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)#]+?)(?:#([\w-]+))?\)", readme)
    assert len(links) >= 20
    for target, anchor in links:
        if target.startswith("docs/"):
            assert _exists(target[len("docs/"):], anchor or None), (target, anchor)
        else:
            assert (ROOT / target).exists(), target


def test_every_plugin_option_is_on_the_options_page():
    declared = (ROOT / "harness" / "plugin" / "options.py").read_text(encoding="utf-8")  # add_options
    options = re.findall(r'addoption\("(--[\w-]+)"', declared)
    inis = re.findall(r'addini\("(\w+)"', declared)
    page = (DOCS / "tiers.md").read_text(encoding="utf-8")
    assert len(options) >= 15 and len(inis) >= 4
    assert [o for o in options if f"`{o}" not in page] == []
    assert [i for i in inis if f"`{i}" not in page] == []


# ---------------------------------------------------------------- measured results
BENCHMARKS = sorted(p for p in (DOCS / "benchmarks").glob("*.md") if p.name != "index.md")


@pytest.mark.parametrize("page", BENCHMARKS, ids=[p.stem for p in BENCHMARKS])
def test_every_measurement_says_when_where_and_with_what(page: Path):
    text = page.read_text(encoding="utf-8")
    date = re.match(r"\d{4}-\d{2}-\d{2}", page.name).group(0)
    assert f"- **Date:** {date}" in text
    assert re.search(r"^- \*\*Commit:\*\* [0-9a-f]{7}", text, flags=re.M)
    assert re.search(r"^- \*\*Machine:\*\* \S", text, flags=re.M) and re.search(r"^- \*\*Model:\*\* \S", text,
                                                                                  flags=re.M)
    assert "## Command" in text and "## Result" in text
    index = (DOCS / "benchmarks" / "index.md").read_text(encoding="utf-8")
    assert f"]({page.name})" in index, f"{page.name} is not listed in docs/benchmarks/index.md"


# ---------------------------------------------------------------- Markdown that renders as written
_ITEM = re.compile(r"^(\s*)([-*]|\d+\.) ")
_SEPARATOR = re.compile(r"^\s*\|(\s*:?-{3,}:?\s*\|)+\s*$")


def _render_problems(text: str) -> list[str]:
    """Lines Python-Markdown would not render as meant: a list glued to the paragraph above it (read as part of
    the paragraph), and a table whose second line is not the header's separator (no header: read as text)."""
    problems, inside, prev, table = [], False, "", []
    front = re.match(r"---\n.*?\n---\n", text, flags=re.S)  # YAML front matter (Material's `hide:`), not Markdown
    skip = front.group(0).count("\n") if front else 0
    for n, line in enumerate([*text.splitlines(), ""], 1):
        if n <= skip:
            continue
        if re.match(r"^\s*```", line):
            inside = not inside
        elif not inside:
            if _ITEM.match(line) and prev.strip() and not _ITEM.match(prev) and not prev.startswith((" ", "\t")) \
                    and not prev.lstrip().startswith("|"):
                problems.append(f"{n}: a list with no blank line before it")
            if line.lstrip().startswith("|"):
                table.append(n)
            else:
                if table and (len(table) < 2 or not _SEPARATOR.match(text.splitlines()[table[1] - 1])):
                    problems.append(f"{table[0]}: a table without a header row")
                table = []
        prev = line
    return problems


def test_every_list_and_table_renders_as_written():
    from tests.docs_kit import doc_files

    pages = [*doc_files(ROOT), ROOT / "CHANGELOG.md"]
    bad = [f"{p.relative_to(ROOT)}:{problem}" for p in pages for problem in _render_problems(p.read_text("utf-8"))]
    assert not bad, "\n".join(bad)
    generated = [f"{path}:{problem}" for path, make in PAGES.PAGES.items() for problem in _render_problems(make())]
    assert not generated, "\n".join(generated)


def test_the_render_check_catches_a_glued_list_and_a_headless_table():
    assert _render_problems("Text:\n- item\n") == ["2: a list with no blank line before it"]
    assert _render_problems("Text:\n\n- item\n  more\n- next\n") == []
    assert _render_problems("| a | b |\n| 1 | 2 |\n") == ["1: a table without a header row"]
    assert _render_problems("| a | b |\n| --- | --- |\n| 1 | 2 |\n\n```\n| x |\n```\n") == []
