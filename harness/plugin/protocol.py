"""The protocol's claims as a user runs them: the packaged claim tests (`harness/protocol/`), which datasets each
claim is measured on, and the `-m` tiers read so that pytest-benchmark's settings marker is not the tier.

`pytest -m benchmark --rag-protocol` (or `rag_protocol = true` in the ini) collects the packaged claim modules
beside the project's own tests; every claim is parametrised over the datasets the project configures
(`harness.datasets.retrieval`, names or paths under `harness.data_dir`), never over the sets the catalogue
names as where the protocol's own figures were measured.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

NO_DATASET = "(no dataset)"
PROTOCOL_DIR = Path(__file__).resolve().parent.parent / "protocol"


def wants_protocol(config: pytest.Config) -> bool:
    """`--rag-protocol`, or the ini's `rag_protocol` when the run names no paths of its own."""
    if config.getoption("rag_protocol", False):
        return True
    return bool(config.getini("rag_protocol")) and config.args_source is not pytest.Config.ArgsSource.ARGS


def add_protocol_args(config: pytest.Config) -> None:
    """Append the packaged claims' folder to the run's arguments (once: an xdist worker gets it already). Outside
    the project its modules' node ids read `test_protocol_<family>.py::...`; `is_protocol_module` collects them
    whatever the project's `python_files` pattern."""
    if not wants_protocol(config):
        return
    present = {str(Path(a.split("::")[0]).resolve()) for a in config.args}
    if str(PROTOCOL_DIR) not in present:
        config.args = [*config.args, str(PROTOCOL_DIR)]


def is_protocol_module(path: Path) -> bool:
    return path.parent == PROTOCOL_DIR and path.name.startswith("test_") and path.suffix == ".py"


def dataset_label(entry: str) -> str:
    """A dataset entry's test id: its folder name (`data/mine` -> `mine`)."""
    return Path(entry).name or entry


def retrieval_datasets(harness: Any) -> list[str]:
    """`harness.datasets.retrieval`, or unset, every folder under the data directory that holds a corpus.jsonl."""
    if harness.datasets.retrieval is not None:
        return list(harness.datasets.retrieval)
    root = harness.data_dir
    return sorted(p.name for p in root.iterdir() if (p / "corpus.jsonl").exists()) if root.is_dir() else []


def parametrize(metafunc: pytest.Metafunc, harness: Any) -> None:
    """One test instance per configured dataset (`rag_dataset_name`), per judge (`rag_judge_name`) and per
    out-of-KB set (`rag_negatives_name`)."""
    if "rag_dataset_name" in metafunc.fixturenames:
        names = retrieval_datasets(harness) or [NO_DATASET]
        metafunc.parametrize("rag_dataset_name", names, ids=[dataset_label(n) for n in names], scope="session")
    if "rag_judge_name" in metafunc.fixturenames:  # one verdict per judge (--judge, repeatable; default the --llm)
        metafunc.parametrize("rag_judge_name", list(dict.fromkeys(harness.judge.models)) or [harness.llm.model])
    if "rag_negatives_name" in metafunc.fixturenames:  # E2-E4 on out-of-KB questions: one verdict per set
        names = list(harness.datasets.negatives)
        metafunc.parametrize("rag_negatives_name", names, ids=[dataset_label(n) for n in names])


# ---------------------------------------------------------------- claims whose data the project does not have
def _qa_present(harness: Any, name: str) -> bool:
    return (harness.dataset_path(name) / "queries.jsonl").is_file()


def _family_missing(harness: Any, family: str, item: pytest.Item) -> str | None:
    """Why the data a packaged claim's family needs is not there (None: it is, or the family can make it)."""
    d = harness.datasets
    if family == "kb":
        return None if d.kb else "harness.datasets.kb is not set (the E2-E4 study needs a knowledge base: a folder " \
                                 "of your pages with structure.json and queries.jsonl, or retail_kb, the synthetic one)"
    if family == "ret" and d.ret == "retail_kb":
        return None
    if family == "negatives":
        callspec = getattr(item, "callspec", None)
        names = [callspec.params["rag_negatives_name"]] if callspec and "rag_negatives_name" in callspec.params \
            else list(d.negatives)
        gone = [n for n in names if not _qa_present(harness, n)]
        return f"harness.datasets.negatives: {', '.join(gone)} not under {harness.data_dir}" if gone else None
    name = getattr(d, family)
    if _qa_present(harness, name):
        return None
    return f"harness.datasets.{family} = {name}: no queries.jsonl under {harness.dataset_path(name)}"


def families_of(item: pytest.Item) -> list[str]:
    """The `harness.datasets` families a packaged claim reads: its `rag_data(...)` marks, and those its fixtures
    imply (`rag_kb`: kb, `rag_judge_draws`: judge, `rag_negatives_name`: negatives)."""
    fams = [f for m in item.iter_markers("rag_data") for f in m.args]
    names = set(getattr(item, "fixturenames", ()))
    fams += [f for fixture, f in (("rag_kb", "kb"), ("rag_judge_draws", "judge"),
                                  ("rag_negatives_name", "negatives")) if fixture in names]
    return list(dict.fromkeys(fams))


def without_data(config: pytest.Config, items: list[pytest.Item], harness: Any) -> None:
    """Deselect the packaged claims whose data the project neither has nor names: a family left at its default
    whose set is not under the data directory, or no BEIR set at all for the retrieval claims. Each family is said
    once at the top of the run (`rag-harness: packaged claims deselected ...`). A set the configuration names and that is
    missing stays selected, so the data check stops the run on it."""
    explicit = harness.datasets.model_fields_set
    dropped: list[pytest.Item] = []
    reasons: dict[str, list[str]] = {}
    wanted = _selected_by_m_and_k(config)
    for item in items:
        if not is_protocol_module(Path(str(item.path))):
            continue
        if not wanted(item):  # -m or -k leaves it out anyway: nothing to say about its data
            continue
        why = None
        callspec = getattr(item, "callspec", None)
        if callspec is not None and callspec.params.get("rag_dataset_name") == NO_DATASET:
            why = (f"no BEIR set (a folder with corpus.jsonl) under {harness.data_dir} and "
                   "harness.datasets.retrieval not set")
        for fam in families_of(item):
            if why is None and fam not in explicit:
                why = _family_missing(harness, fam, item)
        if why:
            dropped.append(item)
            spec = callspec.params.get("rag_spec") if callspec is not None else None
            reasons.setdefault(why, []).append(getattr(spec, "id", item.name))
    if dropped:
        keep = set(map(id, dropped))
        items[:] = [i for i in items if id(i) not in keep]
        config.hook.pytest_deselected(items=dropped)
        config.stash[_NOT_COLLECTED_KEY] = [f"{', '.join(dict.fromkeys(ids))}: {why}" for why, ids in reasons.items()]


_NOT_COLLECTED_KEY = pytest.StashKey[list]()


def _selected_by_m_and_k(config: pytest.Config) -> Any:
    """A predicate: would pytest's own `-m` and `-k` keep this item (read here, before they are applied)."""
    from _pytest.mark import KeywordMatcher

    m_expr, k_expr = _expression(config, "markexpr", "-m"), _expression(config, "keyword", "-k")

    def wanted(item: pytest.Item) -> bool:
        if m_expr is not None and not _tier_match(m_expr, item):
            return False
        return k_expr is None or k_expr.evaluate(KeywordMatcher.from_item(item))

    return wanted


def not_collected_lines(config: pytest.Config) -> list[str]:
    lines = config.stash.get(_NOT_COLLECTED_KEY, [])
    return ["rag-harness: packaged claims deselected, for want of data (name a set in your configuration to "
            "run them):"] + [f"  {line}" for line in lines] if lines else []


# ---------------------------------------------------------------- -m with the harness's tiers
def _is_benchmark_settings(mark: Any) -> bool:
    """pytest-benchmark's `@pytest.mark.benchmark(group=..., min_rounds=...)` carries settings; the harness's
    tier marker is a bare `benchmark`."""
    return mark.name == "benchmark" and bool(mark.args or mark.kwargs)


def select_tiers(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Apply `-m` here when it names `benchmark` and some test carries pytest-benchmark's settings marker: such a
    mark is not the benchmark tier, so `-m benchmark` leaves a user's pytest-benchmark test alone (and
    `-m "not benchmark"` keeps it). pytest's own `-m` is then given nothing left to do."""
    expr_text = config.getoption("markexpr", "")
    if not expr_text or "benchmark" not in expr_text:
        return
    if not any(_is_benchmark_settings(m) for item in items for m in item.iter_markers("benchmark")):
        return
    expr = _expression(config, "markexpr", "-m")
    kept: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    for item in items:
        (kept if _tier_match(expr, item) else dropped).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept
    config.stash[_MARKEXPR_KEY] = expr_text
    config.option.markexpr = ""  # applied above; put back once collection is done


_MARKEXPR_KEY = pytest.StashKey[str]()


def _expression(config: pytest.Config, option: str, flag: str) -> Any:
    """The parsed `-m` or `-k` expression (a usage error when malformed, as pytest's own), or None when unset."""
    from _pytest.mark import _parse_expression

    text = config.getoption(option, "")
    return _parse_expression(text, f"Wrong expression passed to '{flag}'") if text else None


def _tier_match(expr: Any, item: pytest.Item) -> bool:
    """`-m` read with the harness's tiers: pytest-benchmark's settings marker is not the benchmark tier."""
    from _pytest.mark import MarkMatcher

    return expr.evaluate(MarkMatcher.from_markers([m for m in item.iter_markers() if not _is_benchmark_settings(m)]))


def restore_markexpr(config: pytest.Config) -> None:
    if _MARKEXPR_KEY in config.stash:
        config.option.markexpr = config.stash[_MARKEXPR_KEY]
