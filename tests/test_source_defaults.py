"""Every default number the source documents fix is the harness's default: one test per place that holds it (so
a changed default fails the test named after it), the shipped wsop.yaml keeps it, the quote stands in the section
the table cites, and the docs' table (docs/source-defaults.md) is the data file's (harness/source_defaults.yaml)."""
from __future__ import annotations

from pathlib import Path

import pytest

from harness.config import HarnessConfig, leaf_fields, load_config
from harness.source_defaults import (PAGE, TABLE_END, TABLE_START, load_source_defaults, markdown_table, page_block,
                                     quote_in_section, resolve, same_value, section_text)

pytestmark = pytest.mark.unit
ROOT = Path(__file__).resolve().parents[1]
SPEC_SOURCES = ROOT.parent / "shared" / "spec-sources"
SOURCES, ROWS = load_source_defaults()
PLACES = [(r, p) for r in ROWS for p in r.at]
CONFIGURED = [(r, p) for r, p in PLACES if p.startswith(("config:", "technique:"))]


def _id(pair) -> str:
    return f"{pair[0].id}@{pair[1]}"


@pytest.mark.parametrize("row,place", PLACES, ids=[_id(x) for x in PLACES])
def test_the_default_is_the_sources(row, place):
    held = resolve(place)
    assert same_value(held, row.value), (f"{place} holds {held!r}; {SOURCES[row.source].label} {row.section} fixes "
                                         f"{row.value!r} ({row.quote!r})")


@pytest.mark.parametrize("row,place", CONFIGURED, ids=[_id(x) for x in CONFIGURED])
def test_the_shipped_wsop_yaml_keeps_it(row, place):
    held = resolve(place, load_config(ROOT / "wsop.yaml"))
    assert same_value(held, row.value), f"wsop.yaml gives {place} {held!r}, the source {row.value!r}"


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_the_quote_stands_in_its_section(row):
    path = SPEC_SOURCES / SOURCES[row.source].file
    if not path.is_file():
        pytest.skip(f"the source documents are not here ({SPEC_SOURCES})")
    assert quote_in_section(path.read_text(encoding="utf-8"), row.section, row.quote), (row.section, row.quote)


def test_every_numeric_protocol_field_is_a_sourced_default():
    """A number under `wsop.` or `ret.` in the configuration is one the sources fix (or it would need a row
    saying where it comes from)."""
    config, placed = HarnessConfig(), {p.partition(":")[2] for _, p in PLACES if p.startswith("config:")}
    numeric = set()
    for f in leaf_fields():
        if f.startswith(("wsop.", "ret.")):
            value = resolve(f"config:{f}", config)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                numeric.add(f)
    assert numeric - placed == set()


def test_the_docs_table_is_the_data_file():
    page = (ROOT / PAGE).read_text(encoding="utf-8")
    assert page.count(TABLE_START) == 1 and page.count(TABLE_END) == 1
    assert page_block(page) == markdown_table(SOURCES, ROWS), \
        f"{PAGE}'s table drifted from harness/source_defaults.yaml: paste `python -m harness.source_defaults`"


# ---------------------------------------------------------------- the resolver, on hand-made values
def test_resolve_reads_the_given_configuration():
    config = HarnessConfig.model_validate({"wsop": {"hyde": {"temperature": 0.1}}, "ret": {"n_hypotheses": 7}})
    assert resolve("config:wsop.hyde.temperature", config) == 0.1
    assert resolve("config:ret.n_hypotheses", config) == 7
    assert resolve("technique:ret.n_hypotheses", config) == 7  # the technique's parameter from its section
    assert resolve("technique:crag.k", config) == 5  # a parameter of the technique's own


def test_resolve_reads_constants_parameter_defaults_and_calls():
    assert resolve("code:harness.retrieval.rank_fusion:RRF_K") == 60
    assert resolve("code:harness.retrieval.rank_fusion:rrf_scores(k)") == 60
    assert resolve("code:harness.techniques.rewrite:Seq2SeqRewriter.rewrite(num_beams)") == 4
    # by hand: a is first, then second: 1/61 + 1/62 = 0.032522...; b is first once: 1/61 = 0.016393...
    assert resolve("call:harness.retrieval.rank_fusion:rrf_scores([['a'], ['b', 'a']])") == \
        pytest.approx({"a": 0.0325224, "b": 0.0163934}, abs=1e-7)
    assert resolve("call:harness.techniques.ret.triangulation:mcq_blend(1.0, 0.0, 0.0, 0.4)") == pytest.approx(0.7 - 0.3)


@pytest.mark.parametrize("place", ["config:wsop.hyde.nope", "code:harness.retrieval.rank_fusion:rrf_scores(rankings)",
                                   "file:wsop.yaml", "code:harness.retrieval.rank_fusion"])
def test_resolve_refuses_what_is_no_default(place):
    with pytest.raises((AttributeError, ValueError)):
        resolve(place)


@pytest.mark.parametrize("held,expected,same", [(0.2, 0.2, True), (0.7 - 0.75 * 0.2, 0.55, True), (5, 5.0, True),
                                                (0.3, 0.31, False), (False, 0, False), (False, False, True),
                                                (1, True, False)])
def test_same_value(held, expected, same):
    assert same_value(held, expected) is same


MD = """# Doc
## 1. One
### 1.1 First
a = 1
```yaml
# a comment, not a heading
b: 2
```
c = 3
### 1.2 Second
d = 4
## 7. Seven
### 7.1 Seven one
e = 5
#### **FR2: Two**
f = 6
"""


@pytest.mark.parametrize("section,inside,outside", [("§1.1", ["a = 1", "b: 2", "c = 3"], ["d = 4"]),
                                                     ("§1", ["a = 1", "d = 4"], ["e = 5"]),
                                                     ("§7", ["e = 5", "f = 6"], ["a = 1"]),
                                                     ("§7.1", ["e = 5", "f = 6"], ["d = 4"]),
                                                     ("FR2", ["f = 6"], ["e = 5"])])
def test_section_text_of_markdown(section, inside, outside):
    text = section_text(MD, section)
    assert all(s in text for s in inside) and not any(s in text for s in outside)


def test_section_text_of_the_json_proposal():
    doc = '```json\n{"summary": "s (default 0)", "risks": ["first", "second x"], "plan": [{"step": "go 3"}]}\n```'
    assert section_text(doc, "summary") == "s (default 0)"
    assert section_text(doc, "risks item 2") == "second x"
    assert section_text(doc, "plan step 1") == "go 3"
    assert quote_in_section(doc, "risks item 2", "second   x") and not quote_in_section(doc, "risks item 1", "x")
    with pytest.raises(ValueError):
        section_text(MD, "§9")


def test_markdown_table_rows():
    from harness.source_defaults import Source, SourceDefault

    sources = {"s": Source("s", "s.md", "S doc")}
    rows = [SourceDefault("a", "s", "§2", "k=5", 5, ("config:wsop.rag_fusion.final_top_k", "technique:crag.k")),
            SourceDefault("b", "s", "FR1", "flag 0", False, (), "not implemented")]
    assert markdown_table(sources, rows).splitlines()[2:] == [
        "| S doc §2 | `k=5` | 5 | `wsop.rag_fusion.final_top_k`<br>technique `crag`: `k` |",
        "| S doc FR1 | `flag 0` | false | none: not implemented |"]
