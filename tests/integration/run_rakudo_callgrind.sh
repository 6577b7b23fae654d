#!/usr/bin/env bash
# run_rakudo_callgrind.sh — the KDE valgrind report that started issue 15, with nothing run
# afterwards: `MVM_JIT_PERF_MAP=1 jitherald run -c elfmap -- valgrind --tool=callgrind
# rakudo ...`, and callgrind_annotate names MoarVM's JIT frames itself. The program's
# output is the plain run's; most instructions that ran in code the perf map lists are
# attributed to a name (what ran before its line was read keeps an address).
. "$(dirname "$0")/lib.sh"
require_tool rakudo rakudo
require_tool valgrind valgrind
require_tool callgrind_annotate valgrind
cd "$T"
prog='sub f($n) { $n < 2 ?? $n !! f($n - 1) + f($n - 2) }; say f(16); say (1..2000).map(* * 2).sum'
rakudo -e "$prog" > plain.out
MVM_JIT_PERF_MAP=1 JITHERALD_DIR=$T/d JITHERALD_RUN_STATS=$T/stats \
    "$CLI" run -c elfmap -- valgrind -q --tool=callgrind --callgrind-out-file="$T/cg.out" \
    rakudo -e "$prog" > run.out 2> run.err || { cat run.err; fail "jitherald run"; }
cmp plain.out run.out || fail "the output differs from a plain run"
cat stats
pid=$(sed -n 's/^pid: //p' cg.out)
at_exit "rm -f /tmp/perf-$pid.map"
map=/tmp/perf-$pid.map
[ -s "$map" ] || fail "rakudo wrote no perf map"
grep -q "pid=$pid .* announced=[1-9]" stats || fail "nothing announced in $pid"
callgrind_annotate --threshold=100 cg.out > ann
grep -E '^ *[0-9,]+ .*:[^ ]*\(gen/moar/[^)]*:[0-9]+\) \[[^]]*/jit-[0-9]+-[0-9]+\.elf\]' ann |
    head -5 | tee named | grep -q . || fail "no MoarVM JIT frame named by callgrind_annotate"
# The instructions in the map's ranges: named (in an image) against left as addresses.
perl "$R/tests/integration/cg_named.pl" "$map" ann ||
    fail "most JIT instructions are not attributed to a name"
# What ran before its line was read keeps an address: the follower's latency. Under
# valgrind, which runs one thread at a time, that latency is valgrind's scheduler's: with its
# default lock the VM's busy threads keep the follower from running (measured: 2 to 10 of
# 11 to 13 lines announced before exit, most instructions left as addresses in 4 of 6
# runs); `jitherald run` asks for the fair one (VALGRIND_OPTS=--fair-sched=try): 94 to
# 99.7% named in 6 of 6 (tests/integration/run_env.sh: what it sets).
echo PASS
