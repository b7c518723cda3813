#!/usr/bin/env bash
# Mutation score of the metric, statistics and fusion code: mutmut mutates what [tool.mutmut] in pyproject.toml
# names (harness/metrics, harness/stats, harness/retrieval/rank_fusion.py), runs the unit tests that cover each mutant,
# and scripts/mutation_score.py prints the killed share per package (docs/benchmarks/2026-11-23-mutation-score.md).
#   bash scripts/mutation.sh            # a fresh run (about 50 min on 2 cores)
#   JOBS=2 bash scripts/mutation.sh     # mutants in parallel
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
"$PY" -c "import mutmut" 2>/dev/null || "$PY" -m pip install -q "mutmut==3.8.1"
rm -rf mutants
HF_HUB_OFFLINE=1 "$PY" -m mutmut run --max-children "${JOBS:-1}" >/dev/null 2>&1 || true
"$PY" scripts/mutation_score.py mutants
