#!/usr/bin/env bash
# The test command: a fresh virtualenv, the package with its dev and docs extras, lint, the type check and the docs
# site built strict, then the unit and integration tiers.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${VENV:-.venv}"
# bytecode caches on (an environment may set PYTHONDONTWRITEBYTECODE): the suite starts a few hundred Python
# processes (pytester runs, CLI children), and each would otherwise compile, and pytest assertion-rewrite, every
# module of the package it imports again
unset PYTHONDONTWRITEBYTECODE
python3 -m venv --clear "$VENV"
. scripts/_install.sh
# torch pinned first so the CPU build is taken from local disk instead of a multi-GB CUDA build
pkg_install -c constraints.txt torch==2.13.0
pkg_install -c constraints.txt -e '.[dev,docs]'
"$VENV/bin/ruff" check .
# the type check (mypy: strict on stats/, metrics/, the configuration, the technique registry and the public API)
# runs on one core beside the docs build and pytest, its output kept for the end; the documentation site is built
# strict (a broken link, a page outside the nav or a generated page that fails stops CI; the site goes into the
# virtualenv, not the tree)
mypy_log="$VENV/mypy.log"
"$VENV/bin/mypy" harness >"$mypy_log" 2>&1 &
mypy_pid=$!
NO_MKDOCS_2_WARNING=1 "$VENV/bin/mkdocs" build --strict --quiet --site-dir "$VENV/site"
set +e
# both cores (pytest-xdist; work stealing evens out the few long meta-tests); the report merges the workers
HF_HUB_OFFLINE=1 "$VENV/bin/python" -m pytest -m "unit or integration" -n auto --dist worksteal --report-dir reports/ci "$@"
status=$?
mypy_status=0
wait "$mypy_pid" || mypy_status=$?
set -e
cat "$mypy_log"
if [ "$mypy_status" -ne 0 ]; then
  echo "mypy found type errors (above): the test command fails" >&2
  exit 1
fi
if [ "$status" -eq 5 ]; then
  echo "pytest collected no tests: treating as a failure" >&2
  exit 1
fi
exit "$status"
