#!/usr/bin/env bash
# bench/attach.sh — from `jitherald attach PID -c gdb` to a gdb that knows the JIT's code:
# the demo JIT compiles N functions in standby and waits; the time of `jitherald attach
# -c gdb` (the rundown: every image built and registered) plus `gdb -p PID -batch -ex
# 'info line gLAST'` (gdb reads every image), beside the peer: the same `gdb -p` on the
# same program run with JITHERALD=gdb from the start (what attaching costs over having
# paid all along). N = 1k, 10k, 100k (JH_BENCH_ATTACH_N). Median of 3, wall seconds.
set -u
B=${JH_BUILD:-build}
NS=${JH_BENCH_ATTACH_N:-1000 10000 100000}
command -v gdb >/dev/null || { echo "gdb not installed: nothing to measure"; exit 0; }
MJ=$B/examples/minijit CLI=$B/jitherald
[ -x "$MJ" ] && [ -x "$CLI" ] || { echo "build first (make)"; exit 0; }
T=$(mktemp -d); trap 'rm -rf "$T"; kill $(jobs -p) 2>/dev/null' EXIT
now() { date +%s.%N; }

# one run: prints "attach_s gdb_s" (attach_s 0 when the channel was on from the start)
one() { # N MODE(standby|gdb)
    local n=$1 mode=$2 prog=$T/p$1.mini
    rm -f "$T/pause"
    JITHERALD=$mode JITHERALD_DIR=$T/d "$MJ" --pause-file "$T/pause" "$prog" > /dev/null 2>&1 &
    local vm=$!
    for _ in $(seq 1 6000); do [ -s "$T/pause" ] && break; sleep 0.05; done
    local pid; pid=$(cat "$T/pause")
    local t0 t1 t2
    t0=$(now)
    [ "$mode" = gdb ] || "$CLI" attach "$pid" -c gdb > /dev/null
    t1=$(now)
    timeout 600 gdb -q -nx -batch -p "$pid" -ex "info line g$((n - 1))" -ex detach \
        > "$T/gdb.out" 2>&1
    t2=$(now)
    grep -q "^Line .* <g$((n - 1))>" "$T/gdb.out" || echo "(gdb did not find g$((n - 1)))" >&2
    rm -f "$T/pause"
    wait $vm 2>/dev/null
    echo "$(echo "$t1 - $t0" | bc) $(echo "$t2 - $t1" | bc)"
}
med() { sort -n | sed -n 2p; }

printf '| N | attach -c gdb s | then gdb -p s | total s | peer: gdb on from start, gdb -p s | ratio |\n'
printf '|---:|---:|---:|---:|---:|---:|\n'
for n in $NS; do
    { for i in $(seq 0 $((n - 1))); do printf 'fn g%d(x) {\n    return x + %d\n}\n' "$i" "$i"; done
      printf 'fn main() {\n    return g0(1)\n}\n'; } > "$T/p$n.mini"
    : > "$T/a"; : > "$T/g"; : > "$T/p"
    for r in 1 2 3; do
        read -r a g < <(one "$n" standby); echo "$a" >> "$T/a"; echo "$g" >> "$T/g"
        read -r _ p < <(one "$n" gdb); echo "$p" >> "$T/p"
    done
    a=$(med < "$T/a") g=$(med < "$T/g") p=$(med < "$T/p")
    printf '| %d | %.2f | %.2f | %.2f | %.2f | %.2f |\n' "$n" "$a" "$g" "$(echo "$a + $g" | bc)" \
        "$p" "$(echo "($a + $g) / $p" | bc -l)"
done
