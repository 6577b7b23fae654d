#!/usr/bin/env bash
# luajit.sh (bench) — what naming LuaJIT's traces costs, on the churn workload of issue 13
# (bench/luajit/stress.lua: ~3,200 traces, ~2,400 of them side traces that patch their
# parent, 10 jit.flush()): CPU time of the process (os.clock at the end of the script: the
# adapter's loading included, jh_close not; median of 5) without jitherald, then with the
# adapter and each channel, and all of them; the difference per trace the process
# compiled, beside LuaJIT's own cost of compiling a trace (CPU from each trace's "start"
# event to its "stop" or "abort", aborted ones included, per trace compiled, in the runs
# without jitherald) and as a multiple of it. Same machine, same run, the configurations
# interleaved round by round. Issue 30's goal: at most 25 µs per trace with all channels.
#   JH_BENCH_LUAJIT="400 2 10"   functions, rounds, flushes
#   JH_BENCH_RUNS=5              runs per configuration (the median is shown)
#   JH_BENCH_LUAJIT_ONLY=unwind  only plain LuaJIT, the adapter alone and the configurations
#                                whose label contains this (one channel's before/after;
#                                several, comma-separated: perfmap,auditlog)
#   JH_BENCH_LUAJIT_BEFORE=DIR   another tree (built: DIR/build/libjitherald.so.0, with its
#                                adapters/luajit), or a commit of this repository (its tree
#                                is built in a temporary directory, ~1 min): its adapter
#                                runs beside this one, in the same rounds, a "before" column
set -u
B=${JH_BUILD:-build}
R=${JH_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
command -v luajit >/dev/null || { echo "luajit is not installed: skipped"; exit 0; }
[ -f "$B/libjitherald.so.0" ] || { echo "$B/libjitherald.so.0 not built (make)"; exit 0; }
args=${JH_BENCH_LUAJIT:-400 2 10}
runs=${JH_BENCH_RUNS:-5}
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
S=$R/bench/luajit/stress.lua
OLD=${JH_BENCH_LUAJIT_BEFORE:-}
if [ -n "$OLD" ] && [ ! -d "$OLD" ] && git -C "$R" rev-parse -q --verify "$OLD^{commit}" >/dev/null; then
    echo "building $OLD's library for the before column..."
    mkdir -p "$T/before" && git -C "$R" archive "$OLD" | tar x -C "$T/before" &&
        make -C "$T/before" -j2 build/libjitherald.so.0 >"$T/before.log" 2>&1 ||
        echo "building $OLD failed: $(tail -3 "$T/before.log")"
    OLD=$T/before
fi
if [ -n "$OLD" ] && [ ! -f "$OLD/build/libjitherald.so.0" ]; then
    echo "JH_BENCH_LUAJIT_BEFORE=$OLD: no build/libjitherald.so.0 there: no before column"; OLD=
fi
export JITHERALD_DIR=$T/d

# the configurations: label, then JITHERALD's value ("-": plain LuaJIT), then more env
CONF=("luajit (no jitherald)|-" "adapter, no channel|" )
for ch in perfmap jitdump gdb unwind auditlog elfmap; do CONF+=("adapter + $ch|$ch"); done
CONF+=("adapter + gdb, no per-guard lines|gdb|JITHERALD_LUAJIT_LINES=0"
       "adapter + all but elfmap|perfmap,jitdump,gdb,unwind,auditlog" "adapter + all channels|all")
if [ -n "${JH_BENCH_LUAJIT_ONLY:-}" ]; then
    keep=("${CONF[@]:0:2}")
    IFS=, read -ra only <<<"$JH_BENCH_LUAJIT_ONLY"
    for c in "${CONF[@]:2}"; do
        for o in "${only[@]}"; do [[ ${c%%|*} == *"$o"* ]] && { keep+=("$c"); break; }; done
    done
    CONF=("${keep[@]}")
fi

one() { # out variant(new|old) channels [env...]: appends "cpu traces side flushes compiling"
    local out=$1 variant=$2 ch=$3 lib=$B/libjitherald.so.0 lua=$R/adapters/luajit lj=-ljitherald
    shift 3
    [ "$variant" = old ] && lib=$OLD/build/libjitherald.so.0 lua=$OLD/adapters/luajit
    [ "$ch" = - ] && { ch=; lj=; }
    rm -rf "$T/d"
    # shellcheck disable=SC2086  # $lj and $args are word lists
    env JITHERALD_LIB="$lib" LUA_PATH="$lua/?.lua;;" JITHERALD="$ch" "$@" \
        sh -c 'echo $$ >"$0"; exec luajit "$@"' "$T/pid" $lj "$S" $args count \
        >/dev/null 2>"$T/err" || { echo "failed: $(cat "$T/err")" >&2; return 1; }
    rm -f "/tmp/perf-$(cat "$T/pid").map"
    grep -Eo 'traces [0-9]+ side [0-9]+ flushes [0-9]+ cpu [0-9.]+ compiling [0-9.]+' "$T/err" |
        awk '{ printf "%.4f %s %s %s %s\n", $8, $2, $4, $6, $10 }' >>"$out"
}
median() { sort -n "$1" 2>/dev/null | awk '{ l[NR] = $0 } END { if (NR) print l[int((NR + 1) / 2)] }'; }

for ((r = 0; r < runs; r++)); do
    for i in "${!CONF[@]}"; do
        IFS='|' read -r _ ch extra <<<"${CONF[$i]}"
        # shellcheck disable=SC2086  # extra: one assignment or none
        one "$T/new.$i" new "$ch" $extra
        if [ -n "$OLD" ] && [ "$ch" != - ]; then
            # shellcheck disable=SC2086
            one "$T/old.$i" old "$ch" $extra
        fi
    done
done

echo "luajit stress.lua $args: CPU of the whole process, median of $runs; per trace:"
echo "the difference to plain LuaJIT divided by the traces that run compiled; x compile: that"
echo "as a multiple of LuaJIT's own CPU per trace compiled (start to stop event, plain runs)."
[ -n "$OLD" ] && echo "before: the adapter and library of $OLD, in the same rounds."
echo
base=$(median "$T/new.0")
[ -n "$base" ] || { echo "plain luajit failed"; exit 0; }
read -r b0 t0 _ _ c0 <<<"$base"
comp=$(awk -v c="$c0" -v t="$t0" 'BEGIN { printf "%.1f", t ? c * 1e6 / t : 0 }')
per() { # median-line: us per trace over plain
    local c t
    read -r c t _ <<<"$1"
    awk -v c="$c" -v b="$b0" -v t="$t" 'BEGIN { printf "%.1f", t ? (c - b) * 1e6 / t : 0 }'
}
if [ -n "$OLD" ]; then
    printf '%-34s %8s %7s %6s | %10s %10s | %10s %8s\n' configuration "CPU s" traces side \
        "per trace" "x compile" "before" "after/bef"
else
    printf '%-34s %8s %7s %6s | %10s %10s\n' configuration "CPU s" traces side "per trace" "x compile"
fi
for i in "${!CONF[@]}"; do
    IFS='|' read -r label _ <<<"${CONF[$i]}"
    m=$(median "$T/new.$i")
    if [ -z "$m" ]; then printf '%-34s failed\n' "$label"; continue; fi
    read -r c t s _ <<<"$m"
    if [ "$i" = 0 ]; then
        printf '%-34s %8s %7s %6s | %10s %10s\n' "$label" "$c" "$t" "$s" - -
        printf '%-34s %8s %7s %6s | %7s us %10s\n' "  of which compiling traces" "$c0" "" "" "$comp" "1.0"
        continue
    fi
    us=$(per "$m")
    x=$(awk -v u="$us" -v k="$comp" 'BEGIN { printf "%.1f", (k > 0 ? u / k : 0) }')
    if [ -n "$OLD" ]; then
        o=$(median "$T/old.$i")
        ous=$( [ -n "$o" ] && per "$o" || echo -)
        ratio=$(awk -v a="$us" -v b="$ous" 'BEGIN { printf (b + 0 > 0 ? "%.2f" : "-"), a / b }')
        printf '%-34s %8s %7s %6s | %7s us %9sx | %7s us %8s\n' "$label" "$c" "$t" "$s" "$us" "$x" "$ous" "$ratio"
    else
        printf '%-34s %8s %7s %6s | %7s us %9sx\n' "$label" "$c" "$t" "$s" "$us" "$x"
    fi
done
echo
echo "(gdb: no debugger attached; under one each trace costs two debugger stops, see docs/gdb.md.)"
