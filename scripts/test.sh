#!/usr/bin/env bash
# The test command: a fresh virtualenv, the package with its dev extra, lint, type check, then the unit and
# integration tiers.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${VENV:-.venv}"
python3 -m venv --clear "$VENV"
"$VENV/bin/pip" install --quiet --upgrade pip
# torch pinned first so pip takes the CPU build from local disk instead of a multi-GB CUDA build
"$VENV/bin/pip" install --quiet -c constraints.txt torch==2.13.0
"$VENV/bin/pip" install --quiet -c constraints.txt -e '.[dev]'
"$VENV/bin/ruff" check .
"$VENV/bin/mypy" harness
set +e
HF_HUB_OFFLINE=1 "$VENV/bin/python" -m pytest -m "unit or integration" --report-dir reports/ci "$@"
status=$?
set -e
if [ "$status" -eq 5 ]; then
  echo "pytest collected no tests: treating as a failure" >&2
  exit 1
fi
exit "$status"
