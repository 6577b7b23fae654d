#!/usr/bin/env bash
# report_demo.sh OUT.png — `make report-demo`: run the demo JIT with the audit log (two
# threads compile, run, unload and recompile loops.mini, logging their structs), build the
# HTML report with `jitherald log ... report`, and screenshot it with headless Chromium.
# The PNG is generated, never committed: the README tells how to make it.
set -eu
OUT=${1:-docs/img/auditlog-report.png}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
B=$ROOT/${BUILD:-build}
CHROME=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
[ -n "$CHROME" ] || { echo "report-demo: needs chromium (apt-get install chromium)" >&2; exit 1; }
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
JITHERALD=auditlog JITHERALD_DIR=$T "$B/examples/minijit" --log-structs --threads 2 --remove \
    --recompile "$ROOT/examples/minijit/loops.mini" > /dev/null
log=$(ls "$T"/minijit-*.jhlog)
"$B/jitherald" log "$log" report -o "$T/report.html" --vm "$B/examples/minijit"
mkdir -p "$(dirname "$OUT")"
"$CHROME" --headless --no-sandbox --disable-gpu --disable-background-networking \
    --disable-component-update --disable-sync --no-first-run --hide-scrollbars \
    --user-data-dir="$T/profile" --window-size=1200,1500 --screenshot="$T/shot.png" \
    "file://$T/report.html" 2> "$T/chrome.err" || { cat "$T/chrome.err" >&2; exit 1; }
cp "$T/shot.png" "$OUT"
cp "$T/report.html" "${OUT%.png}.html"
echo "report-demo: wrote $OUT and ${OUT%.png}.html"
