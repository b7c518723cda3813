"""The rag-harness pytest plugin: tiers, spec binding, `check`, catalogue coverage and reports.

Registered through the `pytest11` entry point, so any project that installs rag-harness gets
its markers, options and fixtures. Collection, binding and run hooks live here; fixtures in
`harness.plugin.fixtures`; the report and the terminal summary in `harness.plugin.reports`.
"""
from __future__ import annotations

import json
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import pytest

from harness.plugin.options import add_options
from harness.catalogue import CatalogueError, load_project_catalogue
from harness.config import ConfigError, load_config
from harness.plugin.state import (  # noqa: F401 - SpecCheckFailed / SpecInconclusive re-exported
    CATALOGUE_KEY, COLLECTOR_KEY, CONFIG_KEY, CONTROL_KEY, ISOLATED_KEY, PROP_BUDGET, PROP_CONTROL, PROP_FATAL,
    PROP_RECORD, PROP_SPECS, PROP_VERDICT, SPEND_KEY, SpecCheckFailed, SpecInconclusive,
    bound_spec as _bound_spec, catalogue_of, estimating, harness_config_of, spend_of, tiers_of as _tiers,
)
from harness.plugin.reports import ReportHooks, record_benchmark
from harness.report.collector import Collector, jsonable

# the fixtures (every name prefixed `rag_`) are plugins of their own, registered with this one
pytest_plugins = ["harness.plugin.fixtures", "harness.plugin.model_fixtures", "harness.plugin.bench_fixtures"]


# ---------------------------------------------------------------- options and configuration
def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "unit: fast tier: no model weights, no network, scripted LLM.")
    config.addinivalue_line("markers", "integration: real embedder and LanceDB, recorded LLM traffic.")
    config.addinivalue_line("markers", "benchmark: real data and live/local models; writes the report.")
    config.addinivalue_line("markers", "spec(*ids): bind a test to catalogue spec ids; the test is parametrised over them.")
    config.addinivalue_line("markers", "rag_data(*families): the harness.datasets families a packaged claim reads.")

    from harness.plugin.options import check_models, check_options, project_spec_paths

    check_options(config)
    rootpath = config.rootpath
    try:
        config.stash[CATALOGUE_KEY] = load_project_catalogue(project_spec_paths(config))
    except CatalogueError as exc:
        raise pytest.UsageError(f"rag-harness: invalid spec catalogue: {exc}") from None

    cfg_path = config.getoption("harness_config") or config.getini("harness_config") or None
    if cfg_path and not Path(cfg_path).is_absolute():  # the ini's path (the command line's is absolute by now)
        cfg_path = str(rootpath / cfg_path)
    overrides: dict[str, Any] = {
        "harness.llm.model": config.getoption("llm"),
        "harness.report_dir": config.getoption("report_dir"),
        "harness.data_dir": config.getoption("data_dir"),
        "harness.max_queries": config.getoption("max_queries"),
        "harness.query_order": config.getoption("query_order"),
        "harness.judge.models": config.getoption("judge"),
    }
    if config.getoption("no_llm_cache"):
        overrides["harness.llm.cache"] = False
    if config.getoption("fixed_n"):
        overrides["harness.sequential.enabled"] = False
    try:
        hc = load_config(cfg_path, **overrides)
    except ConfigError as exc:
        raise pytest.UsageError(f"rag-harness: {exc}") from None
    check_models([("--llm" if config.getoption("llm") else "harness.llm.model", hc.harness.llm.model)]
                 + [("--judge" if config.getoption("judge") else "harness.judge.models", m)
                    for m in hc.harness.judge.models])
    if config.getoption("under_control"):
        # a control must reach the code it breaks: HyDE's cache of generated documents would answer around it
        hc.wsop.hyde.cache_ttl = 0
    if not hc.harness.report_dir.is_absolute():
        hc.harness.report_dir = Path(config.invocation_params.dir) / hc.harness.report_dir
    if not hc.harness.data_dir.is_absolute():
        hc.harness.data_dir = (rootpath / hc.harness.data_dir).resolve()
    if not hc.harness.cache_dir.is_absolute():
        hc.harness.cache_dir = rootpath / hc.harness.cache_dir
    uri = hc.harness.index_uri
    if uri and "://" not in uri and not Path(uri).is_absolute():
        hc.harness.index_uri = str(rootpath / uri)
    config.stash[CONFIG_KEY] = hc
    from harness.plugin.protocol import add_protocol_args

    add_protocol_args(config)
    config.stash[COLLECTOR_KEY] = Collector()
    from harness.plugin.timing import TimingHooks

    if not config.pluginmanager.has_plugin("rag-harness-timing"):
        config.pluginmanager.register(TimingHooks(), "rag-harness-timing")
    from harness.plugin import preflight

    if not config.pluginmanager.has_plugin("rag-harness-preflight"):
        config.pluginmanager.register(preflight, "rag-harness-preflight")
    from harness.plugin import budget

    budget.register(config)
    from harness.llm.spend import Spend

    cap = config.getoption("max_cost")
    config.stash[SPEND_KEY] = Spend(cap if cap is not None else hc.harness.llm.max_cost_usd)
    from harness import provenance

    provenance.note_seed("harness.seed", hc.harness.seed)


# ---------------------------------------------------------------- binding tests to specs
def _dataset_of(item: pytest.Item) -> str:
    """The configured dataset a protocol claim's test instance measures (its `rag_dataset_name`, or the out-of-KB
    set of `rag_negatives_name`), or ''."""
    from harness.plugin.protocol import dataset_label

    params = getattr(getattr(item, "callspec", None), "params", {})
    name = params.get("rag_dataset_name", params.get("rag_negatives_name"))
    return dataset_label(name) if isinstance(name, str) else ""


def _spec_ids(node: Any) -> list[str]:
    ids: list[str] = []
    for mark in node.iter_markers("spec"):
        ids.extend(mark.args)
    return ids


_UNKNOWN_SPECS = pytest.StashKey[list]()


def _unknown_spec_ids(config: pytest.Config) -> str | None:
    """One line per test that names ids the catalogue lacks, each with the nearest known ids, or None."""
    found = config.stash.get(_UNKNOWN_SPECS, [])
    if not found:
        return None
    cat = catalogue_of(config)
    lines = []
    for nodeid, ids in found:
        near = sorted({m for m in (cat.nearest(i, cutoff=0.75) for i in ids) if m})
        hint = f" (did you mean {', '.join(near)}?)" if near else ""
        lines.append(f"{nodeid} names spec id(s) not in the catalogue: {', '.join(ids)}{hint}")
    return "\n  ".join(lines)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    from harness.plugin.protocol import parametrize

    parametrize(metafunc, harness_config_of(metafunc.config).harness)
    ids = _spec_ids(metafunc.definition)
    if not ids:
        return
    cat = catalogue_of(metafunc.config)
    unknown = [i for i in ids if i not in cat]
    if unknown:  # a usage error once collection ends (raised here it would be a collection error with a traceback)
        metafunc.config.stash.setdefault(_UNKNOWN_SPECS, []).append((metafunc.definition.nodeid, unknown))
        return
    if "rag_spec" not in metafunc.fixturenames:
        metafunc.fixturenames.append("rag_spec")
    metafunc.parametrize("rag_spec", [cat[i] for i in ids], ids=ids, indirect=True)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """Give bound tests their catalogue tier, then check catalogue coverage before `-m`/`-k` deselect."""
    unknown = _unknown_spec_ids(config)
    if unknown:
        from harness.plugin.preflight import usage_error

        raise usage_error(config, unknown)
    cat = catalogue_of(config)
    covered: dict[str, list[str]] = {}
    untiered: list[str] = []
    blocking = config.pluginmanager.hasplugin("recording")
    for item in items:
        spec_ = _bound_spec(item)
        if spec_ is not None:
            if not _tiers(item):
                item.add_marker(getattr(pytest.mark, spec_.marker))
            tiers = sorted(_tiers(item))
            item.user_properties.append((PROP_SPECS, f"{spec_.id}|{tiers[0] if tiers else ''}|{_dataset_of(item)}"))
            if spec_.marker in _tiers(item):
                covered.setdefault(spec_.id, []).append(item.nodeid)
        if config.getini("harness_require_tier") and len(_tiers(item)) != 1:
            untiered.append(item.nodeid)
        if "integration" in _tiers(item) and blocking:
            # the integration tier replays recorded traffic: any connection off this machine is an error
            # (pytest-recording lifts the block while a cassette is being recorded)
            item.add_marker(pytest.mark.block_network)
    from harness.plugin.preflight import usage_error  # on an xdist worker it reaches the controller too

    if untiered:
        raise usage_error(config,
            "tests without exactly one tier marker (unit/integration/benchmark):\n  "
            + "\n  ".join(untiered)
        )
    from harness.plugin.options import check_collected

    check_collected(config, [s for s in (_bound_spec(i) for i in items) if s is not None])
    mode = config.getoption("spec_coverage")
    whole_suite = config.args_source is not pytest.Config.ArgsSource.ARGS
    if mode == "strict" or (mode == "auto" and whole_suite and len(cat)):
        missing = [s.id for s in cat if cat.in_project(s.id) and s.id not in covered]
        if missing:
            raise usage_error(config, "catalogue ids with no test at their tier: " + ", ".join(missing))
    from harness.plugin.protocol import select_tiers, without_data

    without_data(config, items, harness_config_of(config).harness)
    select_tiers(config, items)


def pytest_report_collectionfinish(config: pytest.Config) -> list[str]:
    from harness.plugin.protocol import not_collected_lines

    return not_collected_lines(config)


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Module | None:
    """The protocol's packaged claim modules are collected whatever the project's `python_files` pattern."""
    from _pytest.python import path_matches_patterns

    from harness.plugin.protocol import is_protocol_module

    if is_protocol_module(file_path) and not path_matches_patterns(file_path, parent.config.getini("python_files")):
        return pytest.Module.from_parent(parent, path=file_path)
    return None


# ---------------------------------------------------------------- negative controls
@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    """Under --negative-controls, run a spec-bound test first under its control (function-scoped fixtures fresh,
    wider ones kept), so the outcome travels on the real run's reports (xdist ships them to the controller)."""
    if item.config.getoption("negative_controls", False):
        spec_ = _bound_spec(item)
        if spec_ is not None:
            from harness.plugin.control_runs import run_under_control

            item.user_properties.append((PROP_CONTROL, json.dumps(run_under_control(item, spec_))))
        if item.config.getoption("controls_only", False):
            item.add_marker(pytest.mark.skip(reason="--controls-only: the real run is left to the suite that runs "
                                                    "the real tests"))
    return (yield)


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    """`--under-control NAME`: the whole session runs under the negative control (and so do its subprocesses)."""
    from harness.plugin.protocol import restore_markexpr

    restore_markexpr(session.config)
    name = session.config.getoption("under_control", None)
    if name:
        from harness.plugin.controls import CONTROLS, ENV, get_control

        if name not in CONTROLS:  # a usage error from pytest_collection_modifyitems is on its way
            return
        mp = pytest.MonkeyPatch()
        mp.setenv(ENV, name)
        get_control(name).apply(mp)
        session.config.add_cleanup(mp.undo)


_SPEND_BEFORE = pytest.StashKey[list]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item):
    """Note the session's spend before the test's fixtures run: a study computed in a fixture is the test's."""
    item.stash[_SPEND_BEFORE] = spend_of(item.config).rows()
    return (yield)


def _record_spend(item: pytest.Item) -> None:
    """What the test (its fixtures' setup and its call) spent on LLM calls, per technique and role, as a record
    (so it travels across xdist like every other)."""
    before = item.stash.get(_SPEND_BEFORE, None)
    if before is None or item.stash.get(CONTROL_KEY, None) is not None:
        return
    del item.stash[_SPEND_BEFORE]
    rows = spend_of(item.config).rows_since(before)
    if rows:
        item.user_properties.append((PROP_RECORD, json.dumps(jsonable(
            {"kind": "spend", "nodeid": item.nodeid, "rows": rows}), sort_keys=True)))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    if call.when == "call":
        record_benchmark(item)
    if call.when == "call" or (call.when == "setup" and call.excinfo is not None):
        _record_spend(item)
    state = item.stash.get(CONTROL_KEY, None)
    if state is not None and call.when == "call" and call.excinfo is not None:
        from harness.plugin.control_runs import failure_kind

        state["exc"] = failure_kind(item, call.excinfo)
    report = yield
    if call.excinfo is not None and report.failed and call.when in ("setup", "call"):
        from harness.llm.failures import FatalModelError
        from harness.llm.local import LocalModelUnavailable
        from harness.budget import NotWithinBudget
        from harness.llm.spend import BudgetExhausted

        fatal = _cause(call.excinfo.value, FatalModelError)
        local = _cause(call.excinfo.value, LocalModelUnavailable)
        if local is not None:  # every later test that needs the model would fail alike: once, in one line
            report.longrepr = f"rag-harness: {local}"
            item.session.shouldstop = "rag-harness: stopped: the local model cannot start; the error is above"
        elif fatal is not None:
            # every later call would fail alike: litellm's error once, here, and the session stops after this test
            report.longrepr = f"rag-harness: the model cannot be called, so the run stops: {fatal}"
            report.user_properties.append((PROP_FATAL, fatal.kind))
            item.session.shouldstop = (f"rag-harness: stopped at the first failed model call ({fatal.model}: "
                                       f"{fatal.kind}); the error is above")
        elif _caused_by(call.excinfo.value, BudgetExhausted) or _caused_by(call.excinfo.value, NotWithinBudget):
            # cut short by the cost cap or the wall-time budget: neither pass nor fail, the claim reads `budget`
            report.outcome = "skipped"
            report.longrepr = (str(item.path), item.location[1] or 0, f"budget: {call.excinfo.value}")
            refused = _cause(call.excinfo.value, NotWithinBudget)
            needed = getattr(refused, "needed", None)  # the queries the refusal says the claim needs
            if refused is None or refused.started:  # cut once started (a study's rest, a later look, the cost cap):
                from harness.plugin.budget import book_needed  # what its last run says comes first

                needed = book_needed(item.config, item.nodeid) or needed
                needed = {**needed, "started": True} if needed else None
            report.user_properties.append((PROP_BUDGET, json.dumps(needed) if needed else "1"))
        elif estimating(item.config):
            report.outcome = "skipped"
            report.longrepr = (str(item.path), item.location[1] or 0,
                               f"cost estimate run: the test stopped on the stand-in's answers "
                               f"({call.excinfo.typename}); its later calls are not counted")
    return report


def _caused_by(exc: BaseException | None, kind: type) -> bool:
    return _cause(exc, kind) is not None


def _cause(exc: BaseException | None, kind: type) -> Any:
    """The first exception of `kind` in `exc`'s chain of causes, or None."""
    from harness.llm.failures import _chain

    return next((e for e in _chain(exc) if isinstance(e, kind)), None) if exc is not None else None


@pytest.hookimpl(optionalhook=True)
def pytest_recording_configure(config: pytest.Config, vcr: Any) -> None:
    """pytest-recording hook: apply the harness's scrubbing and matching defaults to every cassette."""
    from harness.plugin.model_fixtures import configure_vcr

    configure_vcr(vcr)


@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    config = session.config
    if not hasattr(config, "workerinput") and not config.pluginmanager.has_plugin("rag-harness-reports"):
        config.pluginmanager.register(ReportHooks(config), "rag-harness-reports")
    _install_progress(config)


def _install_progress(config: pytest.Config) -> None:
    """Long stages show one live line in the terminal: in place on a TTY, every ~10% otherwise, none under -q
    (nor on an xdist worker, whose output nobody sees)."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None or config.get_verbosity() < 0 or hasattr(config, "workerinput"):
        return
    from harness.progress import ProgressReporter, reporting

    capman = config.pluginmanager.get_plugin("capturemanager")
    tty = bool(getattr(reporter, "isatty", False))
    import threading

    lock = threading.Lock()

    def write(text: str, final: bool) -> None:
        with lock:
            ctx = capman.global_and_fixture_disabled() if capman is not None else nullcontext()
            with ctx:
                if tty:
                    reporter.write("\r" + text + "\x1b[K" + ("\n" if final else ""), flush=True)
                else:
                    reporter.ensure_newline()
                    reporter.write_line("  " + text)

    cm = reporting(ProgressReporter(write, tty=tty, spend=spend_of(config)))
    cm.__enter__()

    def close() -> None:
        cm.__exit__(None, None, None)

    config.add_cleanup(close)


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """Close the HTTP clients litellm kept (an API model's too): an unclosed socket collected at exit is a
    warning, and an error in a project whose warnings are errors."""
    from harness.llm._litellm import close_clients

    close_clients()
