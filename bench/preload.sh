#!/usr/bin/env bash
# preload.sh (bench) — `jitherald run` (the preload library, adapters/preload), idle and with
# both cores kept busy by two other jobs (busy loops):
#   in the VM  per record heard (a map line, a jitdump load with its debug record), the time
#              the VM's thread spends inside jitherald over the writes that made it (p50,
#              p99, max), beside the time the VM's own calls took to write it (write,
#              fprintf, fwrite...), from the
#              JITHERALD_RUN_STATS line of the process that wrote the map: tests/programs/
#              run_vm latency (one function at a time), node, rakudo and Erlang with the
#              default channels and with all
#   callgrind  the share of rakudo's JIT instructions callgrind attributes to a name, under
#              jitherald run -c elfmap, beside a plain callgrind run (JH_BENCH_RUNS runs)
#   overhead   each VM's wall and CPU time with each channel beside the same VM writing
#              the same files without jitherald run (median of JH_BENCH_RUNS runs, default 5)
#              and the same channels again from an earlier build (JH_BENCH_BEFORE), in the
#              same rounds, interleaved: plain, each channel now, each channel before
# JH_BENCH_PARTS (default "vm callgrind overhead"): which tables.
# JH_BENCH_VMS (default "rakudo node erlang"): which VMs the overhead table runs.
# JH_BENCH_CHANNELS (default "gdb unwind elfmap auditlog all"): its rows (more rounds of
# fewer rows, e.g. "all", in the same time).
# JH_BENCH_BEFORE: the "before" columns of the overhead table: a build directory holding
# jitherald, libjitherald-run.so and libjitherald.so.0 of another commit, or a git revision
# of this tree, built here (lib and cli, a minute or two): JH_BENCH_BEFORE=main.
# A benchmark, not a test: it prints tables and never fails on a number.
set -u
B=$(cd "${JH_BUILD:-build}" && pwd)
R=$(cd "$(dirname "$0")/.." && pwd)
CLI=$B/jitherald
V=$B/tests/programs/run_vm
runs=${JH_BENCH_RUNS:-5}
parts=" ${JH_BENCH_PARTS:-vm callgrind overhead} "
part() { [[ $parts == *" $1 "* ]]; }
T=$(mktemp -d)
spinners=()
load() { # on|off: two busy loops, one per core of this machine's two
    if [ "$1" = on ]; then
        for _ in 1 2; do sh -c 'while :; do :; done' & spinners+=($!); done
    else
        [ ${#spinners[@]} -gt 0 ] && kill "${spinners[@]}" 2>/dev/null
        wait "${spinners[@]}" 2>/dev/null
        spinners=()
    fi
}
trap 'load off; rm -rf "$T"' EXIT
export JITHERALD_DIR=$T/d
# NODE_EXTRA_CA_CERTS (set in some CI images) makes node parse every CA certificate at
# start: 70 ms of its 104 at `node -e 0` on this machine, which would shrink every node
# ratio below by a third. The table measures node as a user starts it.
unset NODE_EXTRA_CA_CERTS
[ -x "$CLI" ] && [ -e "$B/libjitherald-run.so" ] || { echo "$CLI not built (make)"; exit 0; }
here=$PWD
cd "$T"

median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
# CMD... run with its pid known (every wrapper here, jitherald run included, execs), its
# perf map and jitdump in /tmp removed afterwards: only this run's, other jobs share /tmp.
pidrun() {
    sh -c 'echo $$ > "$0"; exec "$@"' "$T/pid" "$@" > /dev/null 2>&1
    local p
    p=$(cat "$T/pid" 2>/dev/null)
    [ -n "$p" ] && rm -f "/tmp/perf-$p.map" "/tmp/jit-$p.dump"
}
field() { tr ' ' '\n' | sed -n "s/^$1=//p"; }
us() { awk -v n="${1:-0}" 'BEGIN { printf "%.1f", n / 1000 }'; }

# The stats line of the process that wrote the most lines and records.
heaviest() {
    awk '{ n = 0; for (i = 1; i <= NF; i++) if ($i ~ /^(map_lines|dump_loads)=/) {
           split($i, kv, "="); n += kv[2] } if (n >= best) { best = n; line = $0 } }
         END { print line }' "$1"
}

in_vm_row() { # LOAD NAME CHANNELS CMD...: one run, one row
    local ld=$1 name=$2 ch=$3; shift 3
    : > "$T/stats"
    JITHERALD_RUN_STATS=$T/stats pidrun "$CLI" run -c "$ch" -- "$@"
    local s
    s=$(heaviest "$T/stats")
    [ -n "$s" ] || { printf '%-6s %-8s %-18s (no stats)\n' "$ld" "$name" "$ch"; return; }
    printf '%-6s %-8s %-18s %7s %9s %9s %9s   %9s %9s %9s\n' "$ld" "$name" "$ch" \
        "$(echo "$s" | field announced)" \
        "$(us "$(echo "$s" | field in_jh_p50_ns)")" "$(us "$(echo "$s" | field in_jh_p99_ns)")" \
        "$(us "$(echo "$s" | field in_jh_max_ns)")" \
        "$(us "$(echo "$s" | field vm_write_p50_ns)")" \
        "$(us "$(echo "$s" | field vm_write_p99_ns)")" \
        "$(us "$(echo "$s" | field vm_write_max_ns)")"
}

RAKU='sub f($n) { $n < 2 ?? $n !! f($n - 1) + f($n - 2) }; say f(24); say (1..50000).map(* * 2).sum'
NODE='function f(n) { return n < 2 ? n : f(n - 1) + f(n - 2) } console.log(f(30));
      let a = []; for (let i = 0; i < 2e5; i++) a.push({ i, s: "x" + i }); console.log(a.length)'
ERL='io:format("~p~n", [lists:sum([X * X || X <- lists:seq(1, 200000)])]), halt().'
have() { command -v "$1" > /dev/null; }

if part vm; then
echo "In the VM: per record heard, the time the VM's thread spends inside jitherald, beside"
echo "the time the VM's own calls took to write that record (microseconds)"
printf '%-6s %-8s %-18s %7s %9s %9s %9s   %9s %9s %9s\n' load vm channels announced \
    "in p50" "in p99" "in max" "own p50" "own p99" "own max"
for ld in idle busy; do
    [ $ld = busy ] && load on
    if [ -x "$V" ]; then
        for ch in gdb elfmap all; do in_vm_row $ld run_vm $ch "$V" latency 300; done
    fi
    for ch in gdb,unwind,elfmap all; do
        have node && in_vm_row $ld node $ch node --perf-basic-prof --perf-prof -e "$NODE"
        have rakudo && MVM_JIT_PERF_MAP=1 in_vm_row $ld rakudo $ch rakudo -e "$RAKU"
        have erl && in_vm_row $ld erlang $ch erl +JPperf true -noshell -eval "$ERL"
    done
    load off
done
echo

fi
if part callgrind; then
echo "Callgrind: rakudo's JIT instructions attributed to a name, under jitherald run -c elfmap"
echo "and in a plain callgrind run ($runs runs each; the perf map says which are JIT code)"
if have rakudo && have valgrind; then
    prog='sub f($n) { $n < 2 ?? $n !! f($n - 1) + f($n - 2) }; say f(14); say (1..500).map(* * 2).sum'
    printf '%-22s %s\n' run "% named: min / median / max"
    for how in run plain; do
        pcts=$(for i in $(seq "$runs"); do
            rm -f cg.out
            pre=()
            [ $how = run ] && pre=("$CLI" run -c elfmap --)
            # MVM_SPESH_BLOCKING=1: every run's hot sub is JIT-compiled before it returns
            MVM_JIT_PERF_MAP=1 MVM_SPESH_BLOCKING=1 "${pre[@]}" valgrind -q --tool=callgrind \
                --callgrind-out-file=cg.out rakudo -e "$prog" > /dev/null 2>&1
            pid=$(sed -n 's/^pid: //p' cg.out)
            callgrind_annotate --threshold=100 cg.out > cg.ann 2> /dev/null
            perl "$R/tests/integration/cg_named.pl" "/tmp/perf-$pid.map" cg.ann |
                sed -n 's/.*(\(.*\)% named)/\1/p'
            rm -f "/tmp/perf-$pid.map"
        done | sort -n)
        name="jitherald run"
        [ $how = plain ] && name="plain (no jitherald)"
        printf '%-22s %s / %s / %s\n' "$name" "$(echo "$pcts" | head -1)" \
            "$(echo "$pcts" | median)" "$(echo "$pcts" | tail -1)"
    done
else
    echo "  rakudo or valgrind not installed"
fi
echo
fi

time_ms() { # CMD...: "wall cpu" ms of one run, CPU user + system of every process in it
    # (the VM's files in /tmp removed after it)
    local TIMEFORMAT='%R %U %S' t
    t=$( { time pidrun "$@"; } 2>&1 )
    echo "$t" | awk '{ printf "%d %d\n", $1 * 1000, ($2 + $3) * 1000 }'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b ? a / b : 0 }'; }
vms=" ${JH_BENCH_VMS:-rakudo node erlang} "
# The build the "before" columns run: a directory, or a revision built into $T/before.
before_cli=
if [ -n "${JH_BENCH_BEFORE:-}" ] && part overhead; then
    if (cd "$here" && [ -d "$JH_BENCH_BEFORE" ]); then
        before_cli=$(cd "$here" && cd "$JH_BENCH_BEFORE" && pwd)/jitherald
    elif git -C "$R" rev-parse -q --verify "$JH_BENCH_BEFORE^{commit}" > /dev/null; then
        mkdir -p "$T/before-src"
        git -C "$R" archive "$JH_BENCH_BEFORE" | tar -x -C "$T/before-src" &&
            make -C "$T/before-src" -j2 BUILD=build lib cli > "$T/before.log" 2>&1 &&
            before_cli=$T/before-src/build/jitherald
        [ -n "$before_cli" ] || { echo "JH_BENCH_BEFORE=$JH_BENCH_BEFORE did not build:"; tail -5 "$T/before.log"; }
    else
        echo "JH_BENCH_BEFORE=$JH_BENCH_BEFORE: neither a build directory nor a revision"
    fi
    [ -n "$before_cli" ] && { [ -x "$before_cli" ] && [ -e "$(dirname "$before_cli")/libjitherald-run.so" ] ||
        { echo "$before_cli or its libjitherald-run.so missing: no before columns"; before_cli=; }; }
fi
chans=${JH_BENCH_CHANNELS:-gdb unwind elfmap auditlog all}
bench_vm() { # LOAD NAME CMD...: rounds of plain, every channel, every channel before
    local ld=$1 name=$2; shift 2
    local i ch m c b bc t base bcpu
    : > "$T/times"
    for i in $(seq "$runs"); do
        echo "plain $(time_ms "$@")" >> "$T/times"
        for ch in $chans; do
            echo "$ch $(time_ms "$CLI" run -c "$ch" -- "$@")" >> "$T/times"
            [ -n "$before_cli" ] &&
                echo "b.$ch $(time_ms "$before_cli" run -c "$ch" -- "$@")" >> "$T/times"
        done
    done
    col() { awk -v k="$1" -v f="$2" '$1 == k { print $f }' "$T/times" | median; }
    base=$(col plain 2) bcpu=$(col plain 3)
    printf '%-6s %-8s %-10s %8s %8s %8s %8s\n' "$ld" "$name" "plain" "$base" "1.00" "$bcpu" "1.00"
    for ch in $chans; do
        m=$(col "$ch" 2) c=$(col "$ch" 3)
        printf '%-6s %-8s %-10s %8s %8s %8s %8s' "$ld" "$name" "$ch" "$m" \
            "$(ratio "$m" "$base")" "$c" "$(ratio "$c" "$bcpu")"
        if [ -n "$before_cli" ]; then
            b=$(col "b.$ch" 2) bc=$(col "b.$ch" 3)
            printf '   %8s %8s %8s %8s' "$b" "$(ratio "$b" "$base")" "$bc" "$(ratio "$bc" "$bcpu")"
        fi
        echo
    done
}
if part overhead; then
echo "Overhead: wall time and CPU time (user + system, all processes) of the VM with jitherald"
echo "run -c CHANNEL, beside the same run without (both write the VM's own perf map / jitdump;"
echo "median of $runs rounds, each round every row once, interleaved; CPU time is the steadier"
echo "on a loaded machine; load: $(cut -d' ' -f1-3 /proc/loadavg))"
[ -n "$before_cli" ] && echo "before: the same channels from ${JH_BENCH_BEFORE}'s build, in the same rounds"
printf '%-6s %-8s %-10s %8s %8s %8s %8s' load vm channel "wall ms" ratio "cpu ms" ratio
[ -n "$before_cli" ] && printf '   %8s %8s %8s %8s' "before" ratio "cpu ms" ratio
echo
for ld in idle busy; do
    [ $ld = busy ] && load on
    [[ $vms == *" rakudo "* ]] && have rakudo && MVM_JIT_PERF_MAP=1 bench_vm $ld rakudo rakudo -e "$RAKU"
    [[ $vms == *" node "* ]] && have node && bench_vm $ld node node --perf-basic-prof --perf-prof -e "$NODE"
    [[ $vms == *" erlang "* ]] && have erl && bench_vm $ld erlang erl +JPperf true -noshell -eval "$ERL"
    load off
done
fi
exit 0
