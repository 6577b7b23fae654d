#!/usr/bin/env bash
# report.sh — `jitherald log F report --profile perf.data` at scale: logs of 1k, 10k and
# 100k functions of the demo JIT (each function spins a little, main calls them all),
# profiled with `perf record -k 1 -g`. Prints, per size: the report's generation time
# (and, within it, reading the log alone) beside the peer, `perf report --stdio` on the
# same perf.data (with the perf map the perfmap channel wrote), the page's size, and its load in headless Chromium: the wall
# time of `chromium --dump-dom` until the page's script has inflated its data and drawn
# (virtual time: the browser runs the page to its end, not for a clock), minus that of an
# empty page (the browser's own start). The page's own performance.now() is virtual time
# there, so it is not shown.
# Then one big profile (JH_BENCH_SAMPLES samples, default 1,000,000, recorded at 20 kHz
# without call chains) against the 1k log when the machine can afford it (skip with
# JH_BENCH_SAMPLES=0). Not part of CI; never fails on a number.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
B=${JH_BUILD:-$ROOT/${BUILD:-build}}
CLI=$B/jitherald MJ=$B/examples/minijit
SIZES=${JH_BENCH_SIZES:-1000 10000 100000}
BIG=${JH_BENCH_SAMPLES:-1000000}
CHROME=$(command -v chromium || command -v chromium-browser || true)
command -v perf >/dev/null || { echo "report: needs perf"; exit 0; }
T=$(mktemp -d "${TMPDIR:-/tmp}/jh-bench-report.XXXXXX")
trap 'rm -rf "$T"; rm -f /tmp/perf-$$-none.map' EXIT
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }
# chromium wall time on a URL (seconds), with its DOM in $2
chrome_time() {
    local t0 t1
    t0=$(now)
    timeout 600 "$CHROME" --headless --no-sandbox --disable-gpu --disable-background-networking \
        --disable-component-update --disable-sync --no-first-run --user-data-dir="$T/cp" \
        --virtual-time-budget=120000 --window-size=1200,1400 --dump-dom "$1" >"$2" 2>/dev/null
    t1=$(now)
    secs "$t0" "$t1"
}
# mini N ROUNDS: N functions spinning ROUNDS each, main calling them all
mini() {
    awk -v n="$1" -v r="$2" 'BEGIN {
        for (i = 0; i < n; i++) printf "fn g%d(n) {\n    var s = 0\n    var i = 0\n    while i < n {\n        s = s + i %% 7\n        i = i + 1\n    }\n    return s + %d\n}\n", i, i
        printf "fn main(n) {\n    var s = 0\n"
        for (i = 0; i < n; i++) printf "    s = s + g%d(%d)\n", i, r
        printf "    return s\n}\n" }'
}
blank=0
if [ -n "$CHROME" ]; then
    echo '<!DOCTYPE html><title>blank</title>' >"$T/blank.html"
    chrome_time "file://$T/blank.html" "$T/blank.dom" >/dev/null      # warm the disk cache
    blank=$(chrome_time "file://$T/blank.html" "$T/blank.dom")
fi
# one N ROUNDS FREQ [-g]: record, report, perf report; sets the globals of one table row
one() {
    local n=$1 rounds=$2 freq=$3 g=${4:-}
    d=$T/n$n; rm -rf "$d"; mkdir -p "$d"; cd "$d" || return 1
    mini "$n" "$rounds" >p.mini
    JITHERALD=auditlog,perfmap JITHERALD_DIR=$d perf record -q -k 1 $g -F "$freq" -e cpu-clock \
        -o p.data "$MJ" p.mini 1 >/dev/null 2>run.err || { echo "n=$n: perf record failed: $(head -3 run.err)"; return 1; }
    log=$(ls minijit-*.jhlog); pid=${log#minijit-}; pid=${pid%.jhlog}
    [ -s /tmp/perf-$pid.map ] || "$CLI" log "$log" to-perfmap -o /tmp/perf-$pid.map
    local t0 t1 t2 t3
    t0=$(now); "$CLI" log "$log" report --profile p.data -o r.html 2>/dev/null; t1=$(now)
    perf report -i p.data --stdio --no-children --sort sym >rep.txt 2>/dev/null; t2=$(now)
    "$CLI" log "$log" info >/dev/null; t3=$(now)
    is=$(secs "$t2" "$t3")
    rm -f /tmp/perf-$pid.map
    ns=$("$CLI" log "$log" profile p.data | sed -n '1s/.*samples, \([0-9]*\) of .*/\1/p')
    raw=$(sed -n 's/.*data-raw=\([0-9]*\).*/\1/p' r.html | head -1)
    rs=$(secs "$t0" "$t1") ps=$(secs "$t1" "$t2")
    page=$(($(stat -c %s r.html) / 1024)) pdata=$(($(stat -c %s p.data) / 1024))
    load=-
    if [ -n "$CHROME" ]; then
        load=$(awk -v w="$(chrome_time "file://$d/r.html" dom.html)" -v b="$blank" 'BEGIN { printf "%.2f", w - b }')
        grep -q 'data-ready="1"' dom.html || load=failed
    fi
    cd "$T" && rm -rf "$d"
}
blank=0
if [ -n "$CHROME" ]; then
    echo '<!DOCTYPE html><title>blank</title>' >"$T/blank.html"
    chrome_time "file://$T/blank.html" "$T/blank.dom" >/dev/null      # warm the disk cache
    blank=$(chrome_time "file://$T/blank.html" "$T/blank.dom")
fi
printf "report --profile at scale (chromium start, empty page: %ss, subtracted from load)\n" "$blank"
printf "%9s %9s %10s %8s %10s %7s %9s %9s %9s %8s\n" functions samples "report s" "log s" "perf rep s" ratio \
    "page KB" "JSON KB" "p.data KB" "load s"
row() {
    printf "%9d %9s %10s %8s %10s %7s %9d %9d %9d %8s\n" "$1" "${ns:-?}" "$rs" "$is" "$ps" \
        "$(awk -v a="$rs" -v b="$ps" 'BEGIN { printf "%.2fx", (b > 0 ? a / b : 0) }')" \
        "$page" $((${raw:-0} / 1024)) "$pdata" "$load"
}
for n in $SIZES; do
    r=$((200000000 / n)); [ $r -lt 2000 ] && r=2000        # ~2 s of CPU in all
    one "$n" "$r" 4000 -g && row "$n"
done
echo "(log s: reading the log alone, jitherald log F info, part of report s; ratio: report time /"
echo " perf report time, on the same perf.data; load: chromium --dump-dom until the page has"
echo " drawn, minus the empty page's)"
[ "$BIG" -gt 0 ] 2>/dev/null || exit 0
# One big profile: BIG samples at 20 kHz; ~19,000 rounds of a g per sample (measured here).
echo "a big profile, without call chains, 20 kHz:"
one 1000 $((BIG * 19)) 20000 && row 1000
