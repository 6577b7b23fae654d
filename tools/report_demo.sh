#!/usr/bin/env bash
# report_demo.sh OUT.png — `make report-demo`: run the demo JIT with the audit log (two
# threads compile, run, unload and recompile loops.mini, logging their structs) under
# `perf record -k 1 -g`, build the HTML report joined with that profile
# (`jitherald log ... report --profile perf.data`), and screenshot it with headless
# Chromium. Without perf the page has no profile (and says so).
# The PNG is generated, never committed: the README tells how to make it.
set -eu
OUT=${1:-docs/img/auditlog-report.png}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
B=$ROOT/${BUILD:-build}
CHROME=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
[ -n "$CHROME" ] || { echo "report-demo: needs chromium (apt-get install chromium)" >&2; exit 1; }
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cd "$T"
run=("$B/examples/minijit" --log-structs --threads 2 --repeat 3000 --remove --recompile
     "$ROOT/examples/minijit/loops.mini")
profile=()
if command -v perf >/dev/null && JITHERALD=auditlog JITHERALD_DIR=$T perf record -q -k 1 -g \
        -e cpu-clock -o "$T/perf.data" "${run[@]}" >/dev/null 2>"$T/perf.err"; then
    profile=(--profile "$T/perf.data")
else
    echo "report-demo: no perf profile ($(head -1 "$T/perf.err" 2>/dev/null || echo "no perf")): the page without one" >&2
    rm -f "$T"/minijit-*.jhlog
    JITHERALD=auditlog JITHERALD_DIR=$T "${run[@]}" >/dev/null
fi
log=$(ls "$T"/minijit-*.jhlog)
"$B/jitherald" log "$log" report "${profile[@]}" -o "$T/report.html" --vm "$B/examples/minijit" \
    --source-dir "$ROOT/examples"
mkdir -p "$(dirname "$ROOT/$OUT")"
"$CHROME" --headless --no-sandbox --disable-gpu --disable-background-networking \
    --disable-component-update --disable-sync --no-first-run --hide-scrollbars \
    --user-data-dir="$T/profile" --window-size=1200,1400 --virtual-time-budget=30000 \
    --screenshot="$T/shot.png" "file://$T/report.html" 2> "$T/chrome.err" || { cat "$T/chrome.err" >&2; exit 1; }
case $OUT in /*) dest=$OUT ;; *) dest=$ROOT/$OUT ;; esac
cp "$T/shot.png" "$dest"
cp "$T/report.html" "${dest%.png}.html"
echo "report-demo: wrote $OUT and ${OUT%.png}.html"
