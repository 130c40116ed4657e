#!/usr/bin/env bash
# Renders DIR/report.html (from `kvperf report --out DIR`) in headless
# Chromium and saves DIR/report.png next to it, to look at or attach.
#   scripts/report-screenshot.sh reports/seed-000 [WIDTHxHEIGHT]
set -euo pipefail
dir="${1:?usage: scripts/report-screenshot.sh REPORT_DIR [WIDTHxHEIGHT]}"
size="${2:-1300x4000}"
[ -f "$dir/report.html" ] || { echo "kvperf: no report.html in '$dir'" >&2; exit 2; }
command -v chromium >/dev/null 2>&1 || "$(dirname "$0")/ensure-deps.sh" --with-chromium
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars \
  --window-size="${size/x/,}" --screenshot="$dir/report.png" \
  "file://$(cd "$dir" && pwd)/report.html" 2>/dev/null
echo "$dir/report.png"
