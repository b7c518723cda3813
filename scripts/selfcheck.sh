#!/usr/bin/env bash
# The harness's self-checks: the benchmark-tier claims about the harness itself (statistics calibration on real
# topics, metric speed and agreement with pytrec_eval, the embedder against MTEB and its float model, ANN verdicts,
# the report's load time, the live-API simulation). No model is called. Results go to reports/selfcheck/ and are
# kept under the cache directory, where every later run's report (the main job's included) reads them.
# Uses the virtualenv scripts/test.sh or scripts/benchmark.sh made (VENV=...), installing the dev extra if needed.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${VENV:-.venv}"
if ! "$VENV/bin/python" -c "import harness, pytrec_eval" >/dev/null 2>&1; then
  [ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet -c constraints.txt torch==2.13.0
  "$VENV/bin/pip" install --quiet -c constraints.txt -e '.[dev]'
fi
# a self-check whose dataset is not here is deselected on purpose, and said so (a missing dataset is an error)
DATA="${RAG_HARNESS_DATA:-../shared/data}"
deselect=()
for pair in "scifact benchmarks/test_retrieval.py::test_scifact_reproduces_mteb"; do
  read -r ds node <<< "$pair"
  if [ ! -f "$DATA/$ds/corpus.jsonl" ]; then
    echo "selfcheck: deselected $node: no $ds set under $DATA" >&2
    deselect+=(--deselect "$node")
  fi
done
HF_HUB_OFFLINE=1 exec "$VENV/bin/python" -m pytest -m "benchmark and selfcheck" --record-selfchecks \
  --report-dir reports/selfcheck "${deselect[@]}" "$@"
