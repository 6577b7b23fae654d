#!/usr/bin/env bash
# interop.sh (bench) — reading what other JITs write (docs/interop.md), beside the tool
# that reads the same file in the same run:
#   jitdumps of Erlang/OTP (erl +JPperf true) and node (--perf-prof):
#     jitherald check, jitherald inspect (every record printed), perf inject --jit (its
#     build-id cache off, as in the tests: it writes one ELF file per LOAD)
#   callgrind profiles of erl and node, under --dump-instr=yes:
#     jitherald callgrind (names the JIT code from the run's jitdump or perf map),
#     callgrind_annotate (reads the same profile and prints its summary)
# Needs perf, valgrind, erl, node; a missing one skips its rows. Never fails on a number.
set -u
B=$(cd "${JH_BUILD:-build}" 2> /dev/null && pwd) || { echo "build first (make)"; exit 0; }
CLI=$B/jitherald
[ -x "$CLI" ] || { echo "$CLI not built (make)"; exit 0; }
T=$(mktemp -d); trap 'rm -rf "$T"; rm -f ${CLEAN:-}' EXIT
have() { command -v "$1" > /dev/null; }
secs() { # command...: wall seconds, output thrown away ("failed" if it failed)
    local t0=$EPOCHREALTIME; "$@" > /dev/null 2>&1 || { printf failed; return; }
    awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }'; }
mb() { awk -v n="$(stat -c %s "$1")" 'BEGIN { printf "%.1f", n / 1048576 }'; }
ERL_EVAL='io:format("~p~n", [lists:sum(lists:seq(1, 1000))]), halt().'
cat > "$T/fib.js" << 'JS'
function fib(n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
let s = 0; for (let i = 0; i < 3; i++) s += fib(15);
console.log(s);
JS

echo "jitdumps: wall seconds to read each file (jitherald check / inspect, perf inject --jit)"
printf '%-8s %7s %7s | %7s %8s | %7s\n' producer MB LOADs check inspect inject
have perf || echo "(perf is not installed: no jitdump rows)"
dump_row() { # NAME DUMP DIR-WITH-perf.data PID
    local n; n=$("$CLI" check "$2" 2>/dev/null | sed -n 's/.*records: \([0-9]*\) LOAD.*/\1/p')
    local c i j
    c=$(secs "$CLI" check "$2"); i=$(secs "$CLI" inspect "$2")
    j=$(secs perf --buildid-dir /dev/null inject --jit -i "$3/perf.data" -o "$3/perf.jit.data")
    printf '%-8s %7s %7s | %7s %8s | %7s\n' "$1" "$(mb "$2")" "$n" "$c" "$i" "$j"
}
if have perf && have erl; then
    mkdir "$T/erl"
    (cd "$T/erl" && perf record -q -k 1 -o perf.data erl +JPperf true -noshell -eval "$ERL_EVAL" \
        > out 2>&1)
    pid=$(perf report -i "$T/erl/perf.data" --sort pid 2> /dev/null |
        sed -n 's/.* \([0-9][0-9]*\):beam.smp.*/\1/p' | head -1)
    if [ -n "$pid" ] && [ -f "/tmp/jit-$pid.dump" ]; then
        CLEAN="/tmp/jit-$pid.dump /tmp/perf-$pid.map"
        mv "/tmp/jit-$pid.dump" "/tmp/perf-$pid.map" "$T/erl/"
        # perf inject writes its ELF files next to the dump it finds in perf.data: in /tmp
        cp "$T/erl/jit-$pid.dump" /tmp/
        dump_row erl "$T/erl/jit-$pid.dump" "$T/erl"
        find /tmp -maxdepth 1 -name "jitted-$pid-*.so" -delete
        rm -f "/tmp/jit-$pid.dump"
    fi
fi
if have perf && have node; then
    mkdir "$T/node"
    (cd "$T/node" && perf record -q -k 1 -o perf.data node --perf-prof ../fib.js > out 2>&1)
    d=$(ls "$T"/node/jit-*.dump 2>/dev/null | head -1)
    [ -n "$d" ] && dump_row node "$d" "$T/node"
fi

echo
echo "callgrind profiles (--dump-instr=yes): wall seconds to read and rewrite each"
printf '%-8s %7s %9s | %9s %18s\n' producer MB lines "jitherald" callgrind_annotate
have valgrind || echo "(valgrind is not installed: no callgrind rows)"
cg_row() { # NAME PROFILE --map|--jitdump FILE
    local j a
    j=$(secs "$CLI" callgrind "$3" "$4" "$2" "$2.named")
    a=$(secs callgrind_annotate "$2")
    printf '%-8s %7s %9s | %9s %18s\n' "$1" "$(mb "$2")" "$(wc -l < "$2")" "$j" "$a"
}
if have valgrind && have erl; then
    mkdir "$T/cge" && cd "$T/cge"
    valgrind -q --tool=callgrind --trace-children=yes --dump-instr=yes \
        --callgrind-out-file="$T/cge/cg.%p" erl +JPperf true -noshell -eval "$ERL_EVAL" > out 2>&1
    for f in cg.*; do
        p=${f#cg.}
        [ -f "/tmp/jit-$p.dump" ] || continue
        mv "/tmp/jit-$p.dump" "/tmp/perf-$p.map" .
        cg_row erl "$f" --jitdump "jit-$p.dump"
    done
    cd - > /dev/null
fi
if have valgrind && have node; then
    mkdir "$T/cgn" && cd "$T/cgn"
    valgrind -q --tool=callgrind --dump-instr=yes --callgrind-out-file=cg.out \
        node --perf-basic-prof ../fib.js > out 2>&1
    p=$(sed -n 's/^pid: //p' cg.out)
    if [ -f "/tmp/perf-$p.map" ]; then
        mv "/tmp/perf-$p.map" .
        cg_row node cg.out --map "perf-$p.map"
    fi
    cd - > /dev/null
fi
exit 0
