#!/usr/bin/env bash
# luajit.sh (bench) — what naming LuaJIT's traces costs, on the churn workload of issue 13
# (bench/luajit/stress.lua: ~3,200 traces, ~2,400 of them side traces that patch their
# parent, 10 jit.flush()): CPU time of the process (os.clock at the end of the script: the
# adapter's loading included, jh_close not; best of 3) without
# jitherald, then with the adapter and each channel, and all of them; the difference per
# trace the process compiled. Same machine, same run.
#   JH_BENCH_LUAJIT="400 2 10"   functions, rounds, flushes
set -u
B=${JH_BUILD:-build}
R=${JH_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
command -v luajit >/dev/null || { echo "luajit is not installed: skipped"; exit 0; }
[ -f "$B/libjitherald.so.0" ] || { echo "$B/libjitherald.so.0 not built (make)"; exit 0; }
args=${JH_BENCH_LUAJIT:-400 2 10}
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
export JITHERALD_LIB=$B/libjitherald.so.0 LUA_PATH="$R/adapters/luajit/?.lua;;" JITHERALD_DIR=$T/d
S=$R/bench/luajit/stress.lua

one() { # label env... : "cpu_seconds traces side flushes" of one run
    local label=$1; shift
    rm -rf "$T/d"
    # shellcheck disable=SC2086  # $lj and $args are word lists
    env "$@" sh -c 'echo $$ >"$0"; exec luajit "$@"' "$T/pid" \
        $lj "$S" $args count >/dev/null 2>"$T/err" || { echo "failed: $(cat "$T/err")" >&2; return 1; }
    rm -f "/tmp/perf-$(cat "$T/pid").map"
    grep -Eo 'traces [0-9]+ side [0-9]+ flushes [0-9]+ cpu [0-9.]+' "$T/err" |
        awk '{ printf "%.4f %s %s %s\n", $8, $2, $4, $6 }'
}
best() { # label env... : the run with the least CPU of three
    local b="" r
    for _ in 1 2 3; do
        r=$(one "$@") || return 1
        if [ -z "$b" ] || awk -v a="${r%% *}" -v c="${b%% *}" 'BEGIN { exit !(a < c) }'; then b=$r; fi
    done
    echo "$b"
}

echo "luajit stress.lua $args: CPU of the whole process, best of 3; per trace: the"
echo "difference to plain LuaJIT divided by the traces that run compiled."
echo
printf '%-34s %8s %7s %6s %8s | %12s\n' configuration "CPU s" traces side flushes "per trace"
lj=
base=$(best plain JITHERALD=) || exit 0
read -r b0 t0 s0 f0 <<<"$base"
printf '%-34s %8s %7s %6s %8s | %12s\n' "luajit (no jitherald)" "$b0" "$t0" "$s0" "$f0" "-"
lj="-ljitherald"
row() { # label env...
    local label=$1 r c t s f
    r=$(best "$@") || { printf '%-34s failed\n' "$label"; return; }
    read -r c t s f <<<"$r"
    printf '%-34s %8s %7s %6s %8s | %9.1f us\n' "$label" "$c" "$t" "$s" "$f" \
        "$(awk -v c="$c" -v b="$b0" -v t="$t" 'BEGIN { print t ? (c - b) * 1e6 / t : 0 }')"
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
