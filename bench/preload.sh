#!/usr/bin/env bash
# preload.sh (bench) — `jitherald run` (the preload library, adapters/preload):
#   latency   from a VM's write() of a perf-map line to the tools being told: the GDB JIT
#             interface's descriptor changes (gdb), the page is mapped from an image
#             (elfmap), one function at a time (tests/programs/run_vm latency;
#             JH_BENCH_LAT_N functions, default 300)
#   callgrind the share of rakudo's JIT instructions callgrind attributes to a name, with
#             valgrind's default (generic) scheduler lock and with the fair one jitherald
#             run asks for (--fair-sched=try): the follower's latency as a user meets it
#             (JH_BENCH_RUNS runs each)
#   overhead  a VM's wall time with each channel beside the same VM writing the same files
#             without jitherald run (median of JH_BENCH_RUNS runs, default 5): rakudo with
#             MVM_JIT_PERF_MAP=1, node with --perf-basic-prof --perf-prof
set -u
B=$(cd "${JH_BUILD:-build}" && pwd)
R=$(cd "$(dirname "$0")/.." && pwd)
CLI=$B/jitherald
V=$B/tests/programs/run_vm
runs=${JH_BENCH_RUNS:-5}
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
export JITHERALD_DIR=$T/d
[ -x "$CLI" ] && [ -e "$B/libjitherald-run.so" ] || { echo "$CLI not built (make)"; exit 0; }

echo "Latency: write() of a perf-map line -> what the tool sees changes (ms): gdb, the JIT"
echo "interface's descriptor (a debugger is told); elfmap, the page is mapped from an image"
if [ -x "$V" ]; then
    printf '%-8s %s\n' channel distribution
    out=$("$CLI" run -c gdb -- "$V" latency "${JH_BENCH_LAT_N:-300}" gdb 2>/dev/null)
    printf '%-8s %s\n' gdb "${out#latency_ms }"
    out=$("$CLI" run -c elfmap -- "$V" latency "${JH_BENCH_LAT_N:-300}" 2>/dev/null)
    printf '%-8s %s\n' elfmap "${out#latency_ms }"
else
    echo "  $V not built (make programs)"
fi
echo

median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

echo "Callgrind: rakudo's JIT instructions named (in an image) against left as addresses,"
echo "with valgrind's default scheduler lock and the fair one jitherald run asks for ($runs runs)"
if command -v rakudo > /dev/null && command -v valgrind > /dev/null; then
    printf '%-34s %-16s %-30s\n' "valgrind lock" "lines announced" "% named: min / median / max"
    prog='sub f($n) { $n < 2 ?? $n !! f($n - 1) + f($n - 2) }; say f(16);
          say (1..2000).map(* * 2).sum'
    for lock in no try; do
        : > "$T/cg.stats"
        pcts=$(for i in $(seq "$runs"); do
            rm -f "$T"/cg.out
            MVM_JIT_PERF_MAP=1 JITHERALD_RUN_STATS=$T/cg.stats "$CLI" run -c elfmap -- \
                valgrind -q --fair-sched=$lock --tool=callgrind --callgrind-out-file="$T/cg.out" \
                rakudo -e "$prog" > /dev/null 2>&1
            pid=$(sed -n 's/^pid: //p' "$T/cg.out")
            callgrind_annotate --threshold=100 "$T/cg.out" > "$T/cg.ann" 2> /dev/null
            perl "$R/tests/integration/cg_named.pl" "/tmp/perf-$pid.map" \
                "$T/cg.ann" | sed -n 's/.*(\(.*\)% named)/\1/p'
            wc -l < "/tmp/perf-$pid.map" >> "$T/cg.lines"
            rm -f "/tmp/perf-$pid.map"
        done | sort -n)
        seen=$(sed -n 's/.*map_lines=\([0-9]*\).*/\1/p' "$T/cg.stats" |
            awk '{ s += $1 } END { print s + 0 }')
        written=$(awk '{ s += $1 } END { print s + 0 }' "$T/cg.lines")
        rm -f "$T/cg.lines"
        name="ticket (jitherald run's default)"
        [ $lock = no ] && name="generic (--fair-sched=no)"
        printf '%-34s %-16s %s / %s / %s\n' "$name" \
            "$seen of $written" "$(echo "$pcts" | head -1)" "$(echo "$pcts" | median)" \
            "$(echo "$pcts" | tail -1)"
    done
else
    echo "  rakudo or valgrind not installed"
fi
echo
time_ms() { # CMD...: wall ms of one run
    local s e
    s=$(date +%s%N)
    "$@" > /dev/null 2>&1
    e=$(date +%s%N)
    echo $(( (e - s) / 1000000 ))
}
bench_vm() { # NAME CMD...
    local name=$1; shift
    local base ch m
    base=$(for i in $(seq "$runs"); do time_ms "$@"; done | median)
    printf '%-8s %-12s %8s %8s\n' "$name" "plain" "$base" "1.00"
    for ch in gdb unwind elfmap auditlog all; do
        m=$(for i in $(seq "$runs"); do time_ms "$CLI" run -c "$ch" -- "$@"; done | median)
        printf '%-8s %-12s %8s %8s\n' "$name" "$ch" "$m" \
            "$(awk -v a="$m" -v b="$base" 'BEGIN { printf "%.2f", b ? a / b : 0 }')"
    done
}
echo "Overhead: wall time of the VM with jitherald run -c CHANNEL, beside the same run without"
echo "(both write the VM's own perf map / jitdump; median of $runs runs)"
printf '%-8s %-12s %8s %8s\n' vm channel ms ratio
cd "$T"
if command -v rakudo > /dev/null; then
    MVM_JIT_PERF_MAP=1 bench_vm rakudo rakudo -e \
        'sub f($n) { $n < 2 ?? $n !! f($n - 1) + f($n - 2) }; say f(24); say (1..50000).map(* * 2).sum'
else
    echo "rakudo not installed"
fi
if command -v node > /dev/null; then
    bench_vm node node --perf-basic-prof --perf-prof -e \
        'function f(n) { return n < 2 ? n : f(n - 1) + f(n - 2) } console.log(f(30));
         let a = []; for (let i = 0; i < 2e5; i++) a.push({ i, s: "x" + i }); console.log(a.length)'
else
    echo "node not installed"
fi
