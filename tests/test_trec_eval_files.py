"""`ragharness eval` equals trec_eval 10 on trec_eval's own test files: every value that `make quicktest` checks in
out.test, out.comment.test, out.test.a, out.test.aq, out.test.aqc, out.test.aqcM, out.test.aql and
out.test.meas_params, read from the raw files (fixtures/trec/trec_eval/, copied from usnistgov/trec_eval at
f4253652c8efd0d86ddffd0d163cc0a0f813111a; the two large comment.test inputs gzipped, nothing else changed).

Excluded, and why: `runid` (one line in each file) is the run's tag, text rather than a figure; rag-harness reads
scores, not tags. `relstring` is text too, so not one of eval's figures; it is compared below through
`harness.metrics.trec.relstring`. `num_q` is the query count eval prints on its first line. Not compared at all:
trec_eval's other test outputs (out.test.aqZ: z-scores, -Z; out.test.prefs, out.test.qrels_prefs,
out.test.qrels_jg: preference and judgement-group qrels formats, -R), which rag-harness does not implement.
"""
from __future__ import annotations

import gzip
import hashlib
from pathlib import Path

import pytest

from harness.cli import main
from harness.data.trec import read_trec_qrels, read_trec_run
from harness.metrics._ranking import order_run, relevance_matrix
from harness.metrics._registry import ALL_TREC, OFFICIAL, parse_measure
from harness.metrics.trec import relstring

pytestmark = pytest.mark.unit
TE = Path(__file__).resolve().parents[1] / "fixtures" / "trec" / "trec_eval"
TEXT_ONLY = ("runid", "relstring")

# published output -> (qrels, run, measures, eval's options): the Makefile's quicktest lines. rag-harness always
# averages over every judged query, a query missing from the run scoring 0 (trec_eval -c); -q is --per-query.
CASES = {
    "out.test": ("qrels.test", "results.test", ["official"], []),  # trec_eval qrels.test results.test
    "out.test (qrels with comments)": ("qrels.test.with-comments", "results.test", ["official"], []),
    "out.comment.test": ("qrels.comment.test.gz", "results.comment.test.gz", ["official"], []),
    "out.test.a": ("qrels.test", "results.test", ["all_trec"], []),  # -m all_trec
    "out.test.aq": ("qrels.test", "results.test", ["all_trec"], []),  # -m all_trec -q
    "out.test.aqc": ("qrels.test", "results.trunc", ["all_trec"], []),  # -m all_trec -q -c
    "out.test.aqcM": ("qrels.test", "results.trunc", ["all_trec"], ["-M", "100"]),  # -m all_trec -q -c -M100
    "out.test.aql": ("qrels.rel_level", "results.test", ["all_trec"], ["-l", "2"]),  # ... -mrelstring.20 -q -l2
    # -q -miprec_at_recall..10,.20,.25,.75,.50 -m P.5,7,3 -m recall.20,2000 -m Rprec_mult.5.0,0.2,0.35
    # -mutility.2,-1,0,0 -m 11pt_avg..25,.5,.75 -mndcg.1=3,2=9,4=4.5 -mndcg_cut.10,20,23.4 -msuccess.2,5,20
    "out.test.meas_params": ("qrels.test", "results.test", None, []),
}

# git's blob ids of the upstream files (`git ls-tree f4253652 test/`): the fixtures are those bytes
UPSTREAM_BLOBS = {
    "out.comment.test": "4f058bfbea28c7e9364d72541cf4b0d998e21610",
    "out.test": "a379a7ffbf728191f2f4002c7fe859617adb705a",
    "out.test.a": "a4bb0df21f75dbef3b88eb9fd120a01fddf6a1e8",
    "out.test.aq": "960c27913ede8b79e3f3b9cfd0363ed690c337d8",
    "out.test.aqc": "0dc2eb054755acf31d6923cb2ab5421205fc6088",
    "out.test.aqcM": "ca5a802cdb775a886a382188648713cf8f8aec0a",
    "out.test.aql": "1a598db582ced253d47f6b0826e785aff28c629e",
    "out.test.meas_params": "01f6bba03137951577a2ad6276087e6395d16135",
    "qrels.comment.test.gz": "01091ba729c43fd8f5efaae8dbd038959c95055a",
    "qrels.rel_level": "3fa0bb76c7ea3bf6d4c0d8b887f0ff845f82bb1c",
    "qrels.test": "1a699684c260511328d67f5e0f8302089621a9ad",
    "qrels.test.with-comments": "1a001ef807ec434a8f3a51f98f48c22a657c86b4",
    "results.comment.test.gz": "560dff1243eeffbc14d154c9dfa7c4fc122dff2e",
    "results.test": "29cb76d531eb6bef8993b94d4ba88d6bb94566e4",
    "results.trunc": "be856d4e592040f9ff2eea9eb3fa95e7748c5cfa",
    "LICENSE.md": "f3758c7bf47ccbaf16724e392c343e565793c3ae",
}


def _raw(name: str) -> bytes:
    data = (TE / name).read_bytes()
    return gzip.decompress(data) if name.endswith(".gz") else data


def _input(name: str, tmp_path: Path) -> Path:
    if not name.endswith(".gz"):
        return TE / name
    out = tmp_path / name[: -len(".gz")]
    out.write_bytes(_raw(name))
    return out


def _published(case: str) -> list[tuple[str, str, str]]:
    """(measure, query or `all`, value as printed) for every line of a trec_eval output file."""
    cells = [line.split() for line in (TE / case.split(" ")[0]).read_text().splitlines()]
    assert cells and all(len(c) == 3 for c in cells)
    return [(name, qid, value) for name, qid, value in cells]


def _eval(capsys, run: Path, qrels: Path, measures: list[str], opts: list[str]) -> tuple[int, dict]:
    """`ragharness eval ... --per-query` -> (queries, {(measure, query or `all`): printed value})."""
    argv = ["eval", str(run), str(qrels), "--per-query", *opts]
    for m in measures:
        argv += ["-m", m]
    assert main(argv) == 0
    head, *lines = capsys.readouterr().out.splitlines()
    got = {}
    for line in lines:
        if "\t" in line:
            qid, *cells = line.split("\t")
            got.update({(name, qid): value for name, value in (c.rsplit("=", 1) for c in cells)})
        else:
            name, value = line.split()
            got[(name, "all")] = value
    return int(head.split()[0]), got


def test_fixtures_are_trec_eval_files_byte_for_byte():
    for name, blob in UPSTREAM_BLOBS.items():
        data = _raw(name)
        assert hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest() == blob, name


@pytest.mark.parametrize("case", list(CASES))
def test_eval_equals_trec_eval(case, tmp_path, capsys):
    qrels, run, measures, opts = CASES[case]
    published = _published(case)
    names = [n for n, _, _ in published if n not in ("num_q", *TEXT_ONLY) and not n.startswith("relstring")]
    n_queries, got = _eval(capsys, _input(run, tmp_path), _input(qrels, tmp_path),
                           measures or list(dict.fromkeys(names)), opts)
    compared, wrong = 0, []
    for name, qid, value in published:
        if name == "runid" or name.startswith("relstring"):
            continue
        ours = str(n_queries) if name == "num_q" else got.get((str(parse_measure(name)), qid))
        compared += 1
        if ours != value:
            wrong.append(f"{name} {qid}: trec_eval {value}, rag-harness {ours}")
    assert not wrong, f"{len(wrong)} of {compared} differ:\n" + "\n".join(wrong[:30])
    text = sum(n == "runid" or n.startswith("relstring") for n, _, _ in published)
    assert compared + text == len(published) and compared > 0


@pytest.mark.parametrize(("case", "length"), [("out.test.aq", 10), ("out.test.aqc", 10), ("out.test.aqcM", 10),
                                              ("out.test.aql", 20)])
def test_relstring_equals_trec_eval(case, length):
    qrels_name, run_name, _, opts = CASES[case]
    qrels, run = read_trec_qrels(TE / qrels_name), read_trec_run(TE / run_name)
    if "-M" in opts:
        run = {q: order_run(d)[: int(opts[opts.index("-M") + 1])] for q, d in run.items()}
    m = relevance_matrix(qrels, run, max(len(d) for d in run.values()), 2 if "-l" in opts else 1)
    published = {q: v.strip("'") for n, q, v in _published(case) if n.startswith("relstring")}
    assert published and dict(zip(m.query_ids, relstring(m, length))) == published


def test_measure_sets_are_trec_evals():
    for measure_set, case in ((OFFICIAL, "out.test"), (ALL_TREC, "out.test.a")):
        names = [n for n, _, _ in _published(case) if n not in ("num_q", *TEXT_ONLY)]
        assert list(measure_set) == names
        assert len({str(parse_measure(n)) for n in names}) == len(names)


def test_eval_prints_how_missing_queries_count(capsys):
    n_queries, got = _eval(capsys, TE / "results.trunc", TE / "qrels.test", ["map"], [])
    assert n_queries == 3 and got[("map", "302")] == "0.0000"
    main(["eval", str(TE / "results.trunc"), str(TE / "qrels.test"), "-m", "map"])
    assert "3 judged queries (1 missing from the run, each scored 0: the figures are trec_eval -c's)" \
        in capsys.readouterr().out
