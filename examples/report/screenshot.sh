#!/usr/bin/env bash
# Renders an nbus HTML report with headless Chromium and saves a PNG, to check the page as a person
# sees it. Usage: examples/report/screenshot.sh [report.html] [out.png]
# Needs Debian's chromium (apt-get install -y chromium).
set -euo pipefail
report=$(realpath "${1:-report.html}")
out=${2:-report.png}
command -v chromium >/dev/null || { echo "chromium is not installed: apt-get install -y chromium" >&2; exit 1; }
[ -f "$report" ] || { echo "no such report: $report (run nbus demo or nbus bench views --html FILE)" >&2; exit 1; }
timeout 60 chromium --headless --no-sandbox --disable-gpu --window-size=1280,6000 \
  --screenshot="$out" "file://$report" >/dev/null 2>&1
[ -s "$out" ] || { echo "chromium produced no screenshot" >&2; exit 1; }
echo "wrote $out"
