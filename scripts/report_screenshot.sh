#!/usr/bin/env bash
# Open a report in headless Chromium (Debian `chromium`), save a screenshot, and fail on console errors.
# usage: scripts/report_screenshot.sh [reports/index.html] [reports/index.png]
set -euo pipefail
html="$(realpath "${1:-reports/index.html}")"
png="${2:-${html%.html}.png}"
profile="$(mktemp -d)"
log="$(mktemp)"
trap 'rm -rf "$profile" "$log"' EXIT
chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking \
  --disable-component-update --disable-sync --user-data-dir="$profile" --enable-logging=stderr --v=0 \
  --window-size=1400,2000 --screenshot="$png" "file://$html" 2>"$log" >/dev/null
if grep -E 'CONSOLE.*(error|Uncaught)|:ERROR:CONSOLE' "$log"; then
  echo "console errors in $html" >&2
  exit 1
fi
echo "screenshot: $png (no console errors)"
