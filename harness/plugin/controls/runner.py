"""Negative controls for the E2/E3/E4 runner: the dry run, result files, resume and overwrite, logging, portability
and the experiment registry."""
from __future__ import annotations

import os
import sys
from typing import Any, Callable

from harness.plugin.controls.registry import control, replace_everywhere


@control("dry-run-calls-an-api", breaks="the dry run answers through a hosted API instead of its scripted model")
def _dry_network(mp: Any) -> None:
    import dataclasses

    from harness import runner

    orig = runner.build_services

    def build(inputs, **kw):
        services, stats = orig(inputs, **kw)
        if not kw.get("dry_run"):
            return services, stats
        # 192.0.2.1 is TEST-NET-1 (RFC 5737): documentation only, routed nowhere, so even an unguarded
        # attempt reaches no one; the test's socket guard records it and refuses it before any packet.
        net = runner.LLMClient("openai/gpt-4o-mini", api_base="http://192.0.2.1:9/v1", api_key="sk-none",
                               max_attempts=1, timeout_s=2.0)
        return dataclasses.replace(services, llm=net), stats

    mp.setattr(runner, "build_services", build)


@control("dry-run-needs-api-key", breaks="the dry run refuses to start without an API key")
def _dry_key(mp: Any) -> None:
    from harness import runner

    orig = runner.build_services

    def build(inputs, **kw):
        if kw.get("dry_run") and not any(k.endswith("_API_KEY") for k in os.environ):
            raise runner.RunHalted("no API key configured")
        return orig(inputs, **kw)

    mp.setattr(runner, "build_services", build)


@control("resume-ignores-done", breaks="a re-run does not read which queries are already done")
def _resume_off(mp: Any) -> None:
    from harness import runner

    mp.setattr(runner, "completed_ids", lambda path: set())


@control("runner-writes-torn-lines", breaks="every tenth result line is written without its closing brace")
def _torn(mp: Any) -> None:
    import json

    from harness import runner

    calls = {"n": 0}

    def append(fh, row):
        calls["n"] += 1
        text = json.dumps(row, ensure_ascii=False)
        fh.write((text[:-1] if calls["n"] % 10 == 0 else text) + "\n")
        fh.flush()

    mp.setattr(runner, "append_result", append)


@control("runner-drops-results", breaks="every fiftieth result is never written")
def _drop(mp: Any) -> None:
    from harness import runner

    orig = runner.append_result
    calls = {"n": 0}

    def append(fh, row):
        calls["n"] += 1
        if calls["n"] % 50:
            orig(fh, row)

    mp.setattr(runner, "append_result", append)


@control("overwrite-ignored", breaks="--overwrite is ignored (done queries are skipped)")
def _overwrite(mp: Any) -> None:
    from harness import runner

    orig = runner.run_experiments
    replace_everywhere(mp, orig, lambda kb, out, **kw: orig(kb, out, **{**kw, "overwrite": False}))


@control("runner-logs-to-console", breaks="the run logs to the console (stderr) instead of the log file")
def _console(mp: Any) -> None:
    import logging

    from harness import runner

    def file_logger(log_dir):
        log = logging.getLogger(runner.LOG_NAME)
        log.setLevel(logging.DEBUG)
        for h in list(log.handlers):
            log.removeHandler(h)
        log.addHandler(logging.StreamHandler(sys.stderr))
        return log

    replace_everywhere(mp, runner.file_logger, file_logger)


def _edit_log_handlers(mp: Any, edit: Callable[[Any], None]) -> None:
    """Patch the runner's `file_logger` so that `edit` changes each handler of the logger it returns."""
    from harness import runner

    orig = runner.file_logger

    def file_logger(log_dir):
        log = orig(log_dir)
        for h in log.handlers:
            edit(h)
        return log

    replace_everywhere(mp, orig, file_logger)


@control("log-lines-without-time", breaks="log lines carry neither a timestamp nor a level")
def _bare_log(mp: Any) -> None:
    import logging

    _edit_log_handlers(mp, lambda h: h.setFormatter(logging.Formatter("%(message)s")))


@control("errors-not-logged", breaks="failed queries are not logged as errors")
def _no_errors(mp: Any) -> None:
    import logging

    _edit_log_handlers(mp, lambda h: h.addFilter(lambda record: record.levelno < logging.ERROR))


@control("rows-missing-fields", breaks="result rows are written without their ground truth")
def _rows_fields(mp: Any) -> None:
    from harness import runner

    orig = runner.append_result
    mp.setattr(runner, "append_result", lambda fh, row: orig(fh, {k: v for k, v in row.items() if k != "ground_truth"}))


@control("os-specific-import", breaks="a library module imports fcntl (POSIX only)")
def _fcntl(mp: Any) -> None:
    from pathlib import Path

    import harness

    root = str(Path(harness.__file__).resolve().parent)
    orig = Path.read_text

    def read_text(self, *a, **kw):
        text = orig(self, *a, **kw)
        return "import fcntl\n" + text if str(self.resolve()).startswith(root) and self.name == "runner.py" else text

    mp.setattr(Path, "read_text", read_text)


@control("experiment-registry-ignored", breaks="the runner knows only its built-in experiments")
def _registry(mp: Any) -> None:
    from harness.techniques.e2e4 import pipelines as e2e4

    replace_everywhere(mp, e2e4.register_experiment, lambda cls: cls)
