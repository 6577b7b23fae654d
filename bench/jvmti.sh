#!/usr/bin/env bash
# jvmti.sh (bench) — what the JVMTI agent costs HotSpot on a JIT-heavy run: java -Xcomp
# (every method compiled before it first runs: ~5,000 compiled methods and ~400 stubs for
# demo.Hot's bench mode) with -XX:+PreserveFramePointer, agent off; HotSpot's own
# -XX:+DumpPerfMapAtExit (names only, written once at exit); the agent with each channel,
# and with its default channels (perfmap,jitdump,gdb). Wall and CPU (user + sys) seconds of
# the whole JVM, best of 3 by CPU (wall time follows the machine's load: on a shared 2-core
# machine the CPU ratio is the one to read), and each one's ratio to the agent off. Same
# machine, same run.
#   JH_BENCH_JVMTI="2000 3"   bench rounds, runs per row
set -u
B=${JH_BUILD:-build}
R=${JH_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
command -v java >/dev/null || { echo "java is not installed (openjdk-17-jdk-headless): skipped"; exit 0; }
P=$B/tests/programs/java
AGENT=$B/libjitherald-jvmti.so
[ -f "$AGENT" ] && [ -f "$P/demo/Hot.class" ] || { echo "$AGENT or $P not built (make all programs)"; exit 0; }
P=$(cd "$P" && pwd) AGENT=$(cd "$B" && pwd)/libjitherald-jvmti.so    # System.load: absolute
read -r rounds runs <<<"${JH_BENCH_JVMTI:-2000 3}"
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT

one() { # java options...: "wall cpu maplines" of one run (bash's time: the JVM's own)
    rm -rf "$T/d"
    local TIMEFORMAT='%R %U %S' t
    touch "$T/start"
    t=$( { time java -Xcomp -XX:+PreserveFramePointer "$@" -Dhot.native="$P/libhot_native.so" \
              -cp "$P" demo.Hot bench "$rounds" >"$T/out" 2>"$T/err"; } 2>&1 ) ||
        { echo "failed: $(tail -3 "$T/err")" >&2; return 1; }
    grep -qx done "$T/out" || { echo "failed: $(tail -3 "$T/err")" >&2; return 1; }
    # the perf maps this run wrote (the agent's, HotSpot's at exit): counted, removed
    local n=0 m
    for m in /tmp/perf-*.map; do
        [ -f "$m" ] && [ -O "$m" ] && [ "$m" -nt "$T/start" ] || continue
        grep -q 'demo\.Hot\.bench' "$m" && { n=$(grep -c . "$m"); rm -f "$m"; }
    done
    awk -v n="$n" '{ printf "%.2f %.2f %s\n", $1, $2 + $3, n }' <<<"$t"
}
best() { # java options...: the run with the least CPU (wall time follows the machine's load)
    local b="" r i
    for ((i = 0; i < runs; i++)); do
        r=$(one "$@") || return 1
        if [ -z "$b" ] || awk -v a="$r" -v c="$b" 'BEGIN { split(a, x, " "); split(c, y, " ")
                                                          exit !(x[2] < y[2]) }'; then b=$r; fi
    done
    echo "$b"
}

echo "java -Xcomp -XX:+PreserveFramePointer demo.Hot bench $rounds: the whole JVM, best of $runs"
echo "by CPU (user + sys; wall time follows the machine's load: load average $(cut -d' ' -f1 /proc/loadavg)"
echo "on $(nproc) cores); ratios to the agent off; 'map lines': the perf map's lines at exit."
echo
printf '%-40s %8s %6s %8s %6s %10s\n' configuration "wall s" ratio "CPU s" ratio "map lines"
base=$(best) || exit 0
read -r w0 c0 n0 <<<"$base"
row() { # label java-options...
    local label=$1 r w c n; shift
    r=$(best "$@") || { printf '%-40s failed\n' "$label"; return; }
    read -r w c n <<<"$r"
    printf '%-40s %8s %6s %8s %6s %10s\n' "$label" "$w" "$(awk -v a="$w" -v b="$w0" 'BEGIN { printf "%.2f", a / b }')" \
        "$c" "$(awk -v a="$c" -v b="$c0" 'BEGIN { printf "%.2f", a / b }')" "$( [ "$n" = 0 ] && echo - || echo "$n")"
}
printf '%-40s %8s %6s %8s %6s %10s\n' "agent off" "$w0" 1.00 "$c0" 1.00 -
row "-XX:+DumpPerfMapAtExit (HotSpot's own)" -XX:+UnlockDiagnosticVMOptions -XX:+DumpPerfMapAtExit
for ch in none perfmap jitdump gdb auditlog; do
    row "agent, channels=$ch" -agentpath:"$AGENT"=channels:$ch,dir:"$T/d"
done
row "agent, default (perfmap,jitdump,gdb)" -agentpath:"$AGENT"=dir:"$T/d"
echo
echo "(gdb: no debugger attached; under one each method costs two debugger stops, docs/gdb.md."
echo " -XX:+DumpPerfMapAtExit names code live at exit only, without lines; the agent names"
echo " every method as it is compiled, with lines, and removes it when it is unloaded.)"
