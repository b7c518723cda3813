"""Checks at the end of collection, before any test runs, of what the selected tests will need: the datasets their
fixtures load and the embedded local model they start. A problem stops the run once, as a usage error (exit 4):
the file, line and field of each bad input, or the one command that installs what is missing. Nothing is
checked where no selected test needs it (a unit-tier run reads no data and imports no model code).

Registered as its own plugin by `harness.plugin.hooks`; under pytest-xdist each worker checks, and the first
usage error a worker meets is raised again on the controller (`pytest_testnodedown`)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

import pytest

from harness.plugin.state import estimating, harness_config_of, loaded_sets, tiers_of

# the plugin's fixtures whose use in a selected test's closure the checks read (one place, for a rename)
LLM, LOCAL_SERVER, JUDGES = "rag_llm", "rag_local_llm_server", "rag_judges"
CORPUS, BEIR_DATASET, QA_SET, MCQ_SET = "rag_corpus", "rag_beir_dataset", "rag_qa_set", "rag_mcq_set"
WORKER_USAGE_ERROR = "rag_harness_usage_error"  # the key of a worker's usage error in its workeroutput
MAX_LINES = 10  # problems shown at most (then a count of the rest)
_RAISED = pytest.StashKey[str]()  # a usage error already raised during collection


def usage_error(config: pytest.Config, message: str) -> pytest.UsageError:
    """A usage error to raise during collection; on an xdist worker it is also handed to the controller."""
    text = f"rag-harness: {message}"
    config.stash[_RAISED] = text  # pytest still calls pytest_collection_finish: it must not speak over this error
    workeroutput = getattr(config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput[WORKER_USAGE_ERROR] = text
    return pytest.UsageError(text)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """xdist's controller: a worker that stopped on a usage error stops the run with it (exit 4), not with an
    internal error about the test it never ran."""
    text = (getattr(node, "workeroutput", None) or {}).get(WORKER_USAGE_ERROR)
    if text:
        raise pytest.UsageError(text)


@pytest.hookimpl(wrapper=True)
def pytest_collection_finish(session: pytest.Session):
    """After every other plugin's (a control `--under-control` applies there is in force for what is loaded
    here, as it will be for the fixtures that reuse it)."""
    result = yield
    config = session.config
    if config.option.collectonly or not session.items or _RAISED in config.stash:
        return result
    heavy = heavy_in_unit(session.items)
    if heavy:
        raise usage_error(config, heavy)
    lines = local_model_problems(config, session.items) + dataset_problems(config, session.items)
    if lines:  # every problem at once, one line each
        shown = lines[:MAX_LINES] + ([f"... and {len(lines) - MAX_LINES} more"] if len(lines) > MAX_LINES else [])
        raise usage_error(config, "\n  ".join(shown))
    return result


# fixtures that start a model or index a corpus: refused to a selected unit-tier test that no spec binds
HEAVY_FIXTURES = frozenset({
    "rag_llm", "rag_local_llm_server", "rag_judges", "rag_uncached_llm", "rag_corpus", "rag_index", "rag_retriever",
    "rag_dataset", "rag_dense_store", "rag_dense_retriever", "rag_bench_services", "rag_judge_draws",
    "rag_judge_agreement"})


def heavy_in_unit(items: Iterable[pytest.Item]) -> str:
    """The selected unit-tier tests, bound to no spec, that ask for a fixture that starts a model or indexes a
    corpus (the unit tier starts none), as one message; '' when there are none."""
    from harness.plugin.state import bound_spec

    heavy = [f"{item.nodeid} ({', '.join(sorted(HEAVY_FIXTURES & _fixtures(item)))})" for item in items
             if bound_spec(item) is None and tiers_of(item) == {"unit"} and HEAVY_FIXTURES & _fixtures(item)]
    return ("these unit-tier tests ask for a fixture that starts a model or indexes a corpus (the unit tier starts "
            "none: mark them integration or benchmark, or bind them to a spec):\n  " + "\n  ".join(heavy)) if heavy else ""


def _fixtures(item: pytest.Item) -> set[str]:
    return set(getattr(item, "fixturenames", ()))


def _who(nodeids: Iterable[str]) -> str:
    nodeids = list(nodeids)
    return nodeids[0] + (f" and {len(nodeids) - 1} more" if len(nodeids) > 1 else "")


# ---------------------------------------------------------------- the embedded local model
def local_model_problems(config: pytest.Config, items: Iterable[pytest.Item]) -> list[str]:
    """One line per `local/*` model a selected test will start (through the `llm`, `local_llm_server` or `judges`
    fixture) whose packages are missing, with the command that installs all of them."""
    if estimating(config):  # a cost estimate starts no model
        return []
    h = harness_config_of(config).harness
    users: dict[str, list[str]] = {}
    for item in items:
        names = _fixtures(item)
        # a test reaching the LLM only through the services techniques are built on may never call it (a
        # technique that needs none): that one is stopped at the first call, in one line (model_fixtures)
        models = [h.llm.model] if names & {LLM, LOCAL_SERVER} else []
        if JUDGES in names:
            models += list(h.judge.models) or [h.llm.model]
        for model in dict.fromkeys(models):
            if model.startswith("local/"):
                users.setdefault(model.split("/", 1)[1], []).append(item.nodeid)
    if not users:
        return []
    from harness.llm.local import missing_message, unknown_alias

    lines = []
    for alias, nodeids in users.items():
        unknown = unknown_alias(alias)
        problem = f"{unknown} (needed by {_who(nodeids)})" if unknown else missing_message(alias)
        if problem:
            lines.append(problem)
    return lines


# ---------------------------------------------------------------- datasets
@dataclass(frozen=True)
class Need:
    """A dataset a test's fixtures may load: the loader, the folder, the setting that names it, and whether the
    test cannot run without it (else a missing folder is left to the fixture, which fails the test saying so)."""

    kind: str  # "beir", "qa" or "mcq" (harness.data.loaded)
    path: Path
    setting: str
    required: bool


def _beir_sets(h: Any) -> tuple[list[str], bool]:
    """The BEIR sets the retrieval claims run on (`harness.plugin.protocol.retrieval_datasets`), and whether the
    configuration names them (then each is required)."""
    from harness.plugin.protocol import retrieval_datasets

    return retrieval_datasets(h), h.datasets.retrieval is not None


def needs_of(item: pytest.Item, h: Any) -> list[Need]:
    """The datasets a selected test's data fixtures may load: `corpus` its BEIR set, `beir_dataset` the retrieval
    sets, `qa_set`/`mcq_set` every set the families of `harness.datasets` name. A set that a parameter of the
    test names (e.g. `rag_negatives_name`, `rag_dataset_name`) is one it needs."""
    names = _fixtures(item)
    callspec = getattr(item, "callspec", None)
    params = {v for v in (callspec.params.values() if callspec is not None else ()) if isinstance(v, str)}
    d = h.datasets
    needs: list[Need] = []
    if CORPUS in names:
        needs.append(Need("beir", h.dataset_path(h.corpus), "harness.corpus", True))
    if BEIR_DATASET in names:
        sets, given = _beir_sets(h)
        mine = callspec.params.get("rag_dataset_name") if callspec is not None else None
        if isinstance(mine, str):  # a claim's instance loads the one set it was parametrised with
            sets = [mine]
        needs += [Need("beir", h.dataset_path(n), "harness.datasets.retrieval" if given else "a BEIR set under harness.data_dir",
                       given or n in params) for n in sets]
    families: list[tuple[str, str, str]] = []
    if QA_SET in names:
        families += [("qa", f, getattr(d, f)) for f in ("crag", "ret", "judge") if getattr(d, f) != "retail_kb"]
        families += [("qa", "negatives", n) for n in d.negatives]
    if MCQ_SET in names:
        families.append(("mcq", "capability", d.capability))
    from harness.plugin.protocol import families_of

    named = set(families_of(item))  # the families a packaged claim reads are the ones it needs
    needs += [Need(kind, h.dataset_path(n), f"harness.datasets.{f}", n in params or f in named)
              for kind, f, n in families]
    return needs


def dataset_problems(config: pytest.Config, items: Iterable[pytest.Item]) -> list[str]:
    """Each dataset the selected tests need, loaded once (and kept for their fixtures): every problem of every
    set, a line each, naming file, line and field; a required set that is missing is one too."""
    h = harness_config_of(config).harness
    users: dict[tuple[str, Path], dict[str, None]] = {}
    required: dict[tuple[str, Path], str] = {}
    settings: dict[tuple[str, Path], str] = {}
    for item in items:
        needs = needs_of(item, h)
        if needs and not any(n.path.is_dir() for n in needs):  # nothing it could load is there: it cannot run
            needs = [Need(n.kind, n.path, n.setting, True) for n in needs]
        for n in needs:
            key = (n.kind, n.path)
            users.setdefault(key, {})[item.nodeid] = None
            settings.setdefault(key, n.setting)
            if n.required:
                required[key] = n.setting
    lines: list[str] = []
    sets = loaded_sets(config)
    for (kind, path), nodeids in users.items():
        if not path.is_dir():
            if (kind, path) in required:
                lines.append(f"{path}: dataset folder not found{_near(path)} ({required[kind, path]}; set --data-dir "
                             f"or {required[kind, path]}, or deselect the tests that need it), needed by "
                             f"{_who(nodeids)}")
            continue
        shown = _first_per_file(sets.problems(kind, path))
        if shown:
            lines.append(f"{shown[0]} [{settings[kind, path]}, needed by {_who(nodeids)}]")
            lines += shown[1:]
    return lines


def _near(path: Path) -> str:
    """` (did you mean 'x'?)` for the nearest folder beside a missing one, or ''."""
    from difflib import get_close_matches

    siblings = [p.name for p in path.parent.iterdir() if p.is_dir()] if path.parent.is_dir() else []
    near = get_close_matches(path.name, siblings, n=1)
    return f" (did you mean {near[0]!r}?)" if near else ""


def _first_per_file(errors: list[Any]) -> list[str]:
    """The first problem of each file, with a count of that file's others (a bad query line is followed by the
    qrels rows that name its id: the first of each file is the one to fix)."""
    by_file: dict[str, list[Any]] = {}
    for err in errors:
        by_file.setdefault(err.path, []).append(err)
    return [f"{errs[0]}" + (f" (and {len(errs) - 1} more in this file)" if len(errs) > 1 else "")
            for errs in by_file.values()]
