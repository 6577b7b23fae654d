#!/usr/bin/env bash
# luajit.sh (bench) — what naming LuaJIT's traces costs, on the churn workload of issue 13
# (bench/luajit/stress.lua: ~3,200 traces, ~2,400 of them side traces that patch their
# parent, 10 jit.flush()): CPU time of the process (os.clock at the end of the script: the
# adapter's loading included, jh_close not; median of 5) without jitherald, then with the
# adapter and each channel, and all of them; the difference per trace the process
# compiled, beside LuaJIT's own cost of compiling a trace (CPU from each trace's "start"
# event to its "stop" or "abort", aborted ones included, per trace compiled, in the runs
# without jitherald) and as a multiple of it. Same machine, same run. Issue 30's goal:
# at most 25 µs per trace with all channels.
#   JH_BENCH_LUAJIT="400 2 10"   functions, rounds, flushes
#   JH_BENCH_RUNS=5              runs per configuration (the median is shown)
set -u
B=${JH_BUILD:-build}
R=${JH_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
command -v luajit >/dev/null || { echo "luajit is not installed: skipped"; exit 0; }
[ -f "$B/libjitherald.so.0" ] || { echo "$B/libjitherald.so.0 not built (make)"; exit 0; }
args=${JH_BENCH_LUAJIT:-400 2 10}
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
export JITHERALD_LIB=$B/libjitherald.so.0 LUA_PATH="$R/adapters/luajit/?.lua;;" JITHERALD_DIR=$T/d
S=$R/bench/luajit/stress.lua

one() { # label env... : "cpu_seconds traces side flushes compiling_seconds" of one run
    local label=$1; shift
    rm -rf "$T/d"
    # shellcheck disable=SC2086  # $lj and $args are word lists
    env "$@" sh -c 'echo $$ >"$0"; exec luajit "$@"' "$T/pid" \
        $lj "$S" $args count >/dev/null 2>"$T/err" || { echo "failed: $(cat "$T/err")" >&2; return 1; }
    rm -f "/tmp/perf-$(cat "$T/pid").map"
    grep -Eo 'traces [0-9]+ side [0-9]+ flushes [0-9]+ cpu [0-9.]+ compiling [0-9.]+' "$T/err" |
        awk '{ printf "%.4f %s %s %s %s\n", $8, $2, $4, $6, $10 }'
}
median() { # label env... : the run with the median CPU of JH_BENCH_RUNS
    local r i
    for ((i = 0; i < ${JH_BENCH_RUNS:-5}; i++)); do
        r=$(one "$@") || return 1
        echo "$r"
    done | sort -n | awk '{ l[NR] = $0 } END { print l[int((NR + 1) / 2)] }'
}

echo "luajit stress.lua $args: CPU of the whole process, median of ${JH_BENCH_RUNS:-5}; per trace:"
echo "the difference to plain LuaJIT divided by the traces that run compiled; x compile: that"
echo "as a multiple of LuaJIT's own CPU per trace compiled (start to stop event, plain runs)."
echo
printf '%-34s %8s %7s %6s %8s | %10s %10s\n' configuration "CPU s" traces side flushes "per trace" "x compile"
lj=
base=$(median plain JITHERALD=) || exit 0
read -r b0 t0 s0 f0 c0 <<<"$base"
comp=$(awk -v c="$c0" -v t="$t0" 'BEGIN { printf "%.1f", t ? c * 1e6 / t : 0 }')
printf '%-34s %8s %7s %6s %8s | %10s %10s\n' "luajit (no jitherald)" "$b0" "$t0" "$s0" "$f0" "-" "-"
printf '%-34s %8s %7s %6s %8s | %7s us %10s\n' "  of which compiling traces" "$c0" "" "" "" "$comp" "1.0"
lj="-ljitherald"
row() { # label env...
    local label=$1 r c t s f
    r=$(median "$@") || { printf '%-34s failed\n' "$label"; return; }
    read -r c t s f _ <<<"$r"
    local us
    us=$(awk -v c="$c" -v b="$b0" -v t="$t" 'BEGIN { printf "%.1f", t ? (c - b) * 1e6 / t : 0 }')
    printf '%-34s %8s %7s %6s %8s | %7s us %9sx\n' "$label" "$c" "$t" "$s" "$f" "$us" \
        "$(awk -v u="$us" -v k="$comp" 'BEGIN { printf "%.1f", (k > 0 ? u / k : 0) }')"
}
row "adapter, no channel" JITHERALD=
for ch in perfmap jitdump gdb unwind auditlog elfmap; do
    row "adapter + $ch" JITHERALD=$ch
done
row "adapter + gdb, no per-guard lines" JITHERALD=gdb JITHERALD_LUAJIT_LINES=0
row "adapter + all but elfmap" JITHERALD=perfmap,jitdump,gdb,unwind,auditlog
row "adapter + all channels" JITHERALD=all
echo
echo "(gdb: no debugger attached; under one each trace costs two debugger stops, see docs/gdb.md.)"
