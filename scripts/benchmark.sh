#!/usr/bin/env bash
# The main job: the benchmark tier on the embedded local model, writing reports/index.html.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${VENV:-.venv}"
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
"$VENV/bin/pip" install --quiet --upgrade pip
"$VENV/bin/pip" install --quiet torch==2.13.0
# llama-cpp-python compiles from source (about 5 minutes on 2 cores) unless a wheel is cached here
WHEELS="${RAG_HARNESS_WHEELS:-$HOME/.cache/rag-harness-wheels}"
"$VENV/bin/pip" install --quiet --find-links "$WHEELS" -e '.[dev,local]'
mkdir -p "$WHEELS" && "$VENV/bin/pip" wheel --quiet --no-deps --find-links "$WHEELS" -w "$WHEELS" 'llama-cpp-python==0.3.36' || true
# claims whose dataset is not here are deselected on purpose, and said so (a missing dataset is an error)
DATA="${RAG_HARNESS_DATA:-../shared/data}"
deselect=()
for pair in "scifact benchmarks/test_retrieval.py::test_scifact_reproduces_mteb"; do
  read -r ds node <<< "$pair"
  if [ ! -f "$DATA/$ds/corpus.jsonl" ]; then
    echo "benchmark: deselected $node: no $ds set under $DATA" >&2
    deselect+=(--deselect "$node")
  fi
done
set +e
HF_HUB_OFFLINE=1 "$VENV/bin/python" -m pytest -m benchmark --report-dir reports "${deselect[@]}" "$@"
status=$?
set -e
# a run in which nothing was measured (no tests, or every one skipped) is a failure, not a green run
"$VENV/bin/python" - reports/results.json "$status" <<'PY' || exit 1
import json, sys
path, status = sys.argv[1], int(sys.argv[2])
try:
    specs = json.load(open(path))["specs"]
except (OSError, ValueError, KeyError):
    sys.exit(f"benchmark: no report at {path}: nothing ran" if status in (0, 5) else 0)
if not [s for s in specs if s["verdict"] not in ("skipped", "not run")]:
    sys.exit("benchmark: every claim was skipped or not run: nothing was measured")
PY
exit "$status"
