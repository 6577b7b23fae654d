#!/usr/bin/env bash
# run_rakudo_callgrind.sh — the KDE valgrind report that started issue 15, with nothing run
# afterwards: `MVM_JIT_PERF_MAP=1 jitherald run -c elfmap -- valgrind --tool=callgrind
# rakudo ...`, and callgrind_annotate names MoarVM's JIT frames itself. 5 runs while other
# jobs keep both cores busy: in each, the program's output is the plain run's, and at
# least 95% of the instructions that ran in code the perf map lists are attributed to a
# name. (A function is named before it first runs, since its line is heard as MoarVM
# writes it; the follower thread of old read it after the fact, and under valgrind's
# scheduler that was 63.6% or 41.6% on a loaded machine.) MVM_SPESH_BLOCKING=1: MoarVM's
# JIT compiles the same frames in every run (its specializer thread compiled none in one
# callgrind run of callgrind_rakudo.sh).
. "$(dirname "$0")/lib.sh"
require_tool rakudo rakudo
require_tool valgrind valgrind
require_tool callgrind_annotate valgrind
cd "$T"
prog='sub f($n) { $n < 2 ?? $n !! f($n - 1) + f($n - 2) }; say f(14); say (1..500).map(* * 2).sum'
rakudo -e "$prog" > plain.out
keep_cores_busy
# The five runs at once: each is one more job keeping the others' cores busy, and on a
# 2-core machine under load they end sooner than one after the other.
# (each run's perf map, whichever runs got that far)
at_exit 'for f in "$T"/cg.?; do rm -f "/tmp/perf-$(sed -n "s/^pid: //p" "$f").map"; done'
for n in 1 2 3 4 5; do
    MVM_JIT_PERF_MAP=1 MVM_SPESH_BLOCKING=1 JITHERALD_DIR=$T/d JITHERALD_RUN_STATS=$T/stats.$n \
        "$CLI" run -c elfmap -- valgrind -q --tool=callgrind --callgrind-out-file="$T/cg.$n" \
        rakudo -e "$prog" > "run.$n.out" 2> "run.$n.err" &
    pids[n]=$!
    kill_at_exit "${pids[n]}"
done
for n in 1 2 3 4 5; do
    wait "${pids[n]}" || { cat "run.$n.err"; fail "run $n: jitherald run"; }
    cmp plain.out "run.$n.out" || fail "run $n: the output differs from a plain run"
    pid=$(sed -n 's/^pid: //p' "cg.$n")
    map=/tmp/perf-$pid.map
    [ -s "$map" ] || fail "run $n: rakudo wrote no perf map"
    callgrind_annotate --threshold=100 "cg.$n" > "ann.$n"
    grep -E '^ *[0-9,]+ .*:[^ ]*\(gen/moar/[^)]*:[0-9]+\) \[[^]]*/jit-[0-9]+-[0-9]+\.elf\]' \
        "ann.$n" | head -3 | grep -q . || fail "run $n: no MoarVM JIT frame named"
    # The instructions in the map's ranges, from the map rakudo wrote: named (in an image)
    # against left as addresses.
    echo -n "run $n: "
    perl "$R/tests/integration/cg_named.pl" "$map" "ann.$n" 95 ||
        fail "run $n: less than 95% of the JIT instructions attributed to a name"
done
echo PASS
