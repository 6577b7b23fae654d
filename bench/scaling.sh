#!/usr/bin/env bash
# bench/scaling.sh — the costs issue 11 found quadratic, each at N and 4N: the time, and
# how much 4x the input costs (done when <= 5x). Each beside a peer in the same run that
# is known to be linear. Times are CPU seconds (user + system) of the processes doing the
# work, which a loaded machine blurs far less than wall-clock time.
#   12. jitherald log F to-jitdump on logs the library writes (bench/scaling/jit.c: aligned
#       functions with lines and unwind rules, a quarter removed and compiled again);
#       peer: to-perfmap on the same log. Was 25k 2.6 s, 100k 43.9 s, 300k 720 s.
#   15. jitherald log F info on a log with K bytes of garbage after its header, bytes
#       built as frames nested in one another (the worst case for finding the next frame);
#       peer: the same log undamaged. Was 64 KiB 1 s, 256 KiB 16 s, 512 KiB 56 s.
#   11. gdb -batch with the gdb channel, immediate mode, aligned functions (gdb's CPU and
#       the JIT's): N announced then removed with a breakpoint set by name (`break f3`);
#       and attaching at N/2 of N with that breakpoint, then N/2 more and all removed.
#       Was 10k 26 s, 20k 174 s; attaching at 50k of 100k did not finish in 9.5 minutes.
#       Peer: the same JIT without a debugger.
# Also a quadratic cost found on the way: the callgrind symbol table looked up every MOVE
# by scanning all functions loaded before it (80k LOADs + 80k MOVEs: 6.9 s, 20k: 0.3 s).
# JH_BENCH_SCALING_FULL=1 adds the issue's largest sizes (to-jitdump 300k, gdb 100k:
# several minutes). Never fails on a number.
set -u
B=${JH_BUILD:-build}
R=${JH_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
FULL=${JH_BENCH_SCALING_FULL:-0}
CLI=$B/jitherald
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
[ -x "$CLI" ] && [ -f "$B/libjitherald.a" ] || { echo "$CLI missing (make)"; exit 0; }
cc -O2 -D_GNU_SOURCE -I"$R/include" "$R/bench/scaling/jit.c" "$B/libjitherald.a" -lpthread -ldl \
    -o "$T/jit" || { echo "bench/scaling/jit.c did not build"; exit 0; }

cpu() { # command...: prints the CPU seconds it took (itself and the children it waited for)
    "$T/jit" cpu "$@" | awk '{ printf "%.2f", $1 }'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0) printf "%.1fx", b / a; else print "-" }'; }
row() { # what N t(N) t(4N) peer(N) peer(4N)
    printf '%-34s %8s %8s %8s %6s   %8s %8s %6s\n' "$1" "$2" "$3" "$4" "$(ratio "$3" "$4")" \
        "$5" "$6" "$(ratio "$5" "$6")"
}
title() {
    printf '\n%s\n%-34s %8s %8s %8s %6s   %8s %8s %6s\n' "$1" "" N "t(N) s" "t(4N) s" "4N/N" \
        "peer(N)" "peer(4N)" "4N/N"
}

log_of() { [ -f "$T/log$1" ] || "$T/jit" log "$1" "$T/log$1"; echo "$T/log$1"; }

title "12. to-jitdump on a log of N functions (peer: to-perfmap)"
sizes="25000 50000"
[ "$FULL" = 1 ] && sizes="$sizes 75000"
for n in $sizes; do
    a=$(log_of "$n"); b=$(log_of $((4 * n)))
    row "to-jitdump -o /dev/null" "$n" "$(cpu "$CLI" log "$a" to-jitdump -o /dev/null)" \
        "$(cpu "$CLI" log "$b" to-jitdump -o /dev/null)" \
        "$(cpu "$CLI" log "$a" to-perfmap -o /dev/null)" "$(cpu "$CLI" log "$b" to-perfmap -o /dev/null)"
done

title "15. reading a log with K bytes of nested frame-like garbage (peer: the log undamaged)"
base=$(log_of 1000)
for k in 262144 1048576 4194304; do
    "$T/jit" damage "$base" "$T/d$k" "$k"; "$T/jit" damage "$base" "$T/d$((4 * k))" $((4 * k))
    row "log info, K bytes of garbage" "$k" "$(cpu "$CLI" log "$T/d$k" info)" \
        "$(cpu "$CLI" log "$T/d$((4 * k))" info)" "$(cpu "$CLI" log "$base" info)" \
        "$(cpu "$CLI" log "$(log_of 4000)" info)"
done

title "Also: jitherald callgrind's symbol table from a jitdump of N LOADs, each MOVEd (peer: check)"
printf '# callgrind format\nversion: 1\ncreator: bench\npid: 1\ncmd: jit\n\npositions: line\nevents: Ir\n\nfl=(1) a.c\nfn=(1) main\n0 1\n' > "$T/tiny.cgout"
for n in 40000; do
    "$T/jit" jitdump "$n" "$T/j$n"; "$T/jit" jitdump $((4 * n)) "$T/j$((4 * n))"
    row "callgrind --jitdump (N moves)" "$n" \
        "$(cpu "$CLI" callgrind --jitdump "$T/j$n" "$T/tiny.cgout" /dev/null)" \
        "$(cpu "$CLI" callgrind --jitdump "$T/j$((4 * n))" "$T/tiny.cgout" /dev/null)" \
        "$(cpu "$CLI" check "$T/j$n")" "$(cpu "$CLI" check "$T/j$((4 * n))")"
done

if ! command -v gdb > /dev/null; then
    echo; echo "gdb not installed: item 11 not measured"; exit 0
fi
under_gdb() { # n: the JIT run by gdb -batch with a breakpoint set by name; gdb + JIT CPU
    cpu timeout 1800 gdb -q -nx -batch -ex 'set breakpoint pending on' -ex 'break f3' -ex run \
        --args "$T/jit" gdb "$1" remove
}
attached() { # n: gdb attaches at n/2 (breakpoint f3 resolves at once); gdb's CPU
    "$T/jit" gdb "$1" attach > "$T/att" &
    local jp=$! k=0
    while ! grep -q ready "$T/att" 2> /dev/null && [ $k -lt 2000 ]; do sleep 0.05; k=$((k + 1)); done
    cpu timeout 1800 gdb -q -nx -batch -p "$jp" -ex 'break f3' -ex continue
    wait "$jp"
}
title "11. gdb channel under gdb -batch, aligned functions, 'break f3' (peer: no debugger)"
sizes="5000"
[ "$FULL" = 1 ] && sizes="$sizes 25000"
for n in $sizes; do
    row "announce + remove under gdb" "$n" "$(under_gdb "$n")" "$(under_gdb $((4 * n)))" \
        "$(cpu "$T/jit" gdb "$n" remove)" "$(cpu "$T/jit" gdb $((4 * n)) remove)"
done
for n in $sizes; do
    row "attach at N/2 of N" "$n" "$(attached "$n")" "$(attached $((4 * n)))" - -
done
echo "(CPU seconds: the CLI's for 12 and 15, gdb's and the JIT's for 11)"
