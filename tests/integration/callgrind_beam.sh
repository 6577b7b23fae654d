#!/usr/bin/env bash
# callgrind_beam.sh — `jitherald callgrind` on Erlang/OTP's JIT (erl +JPperf true) under
# callgrind, the case that broke the old rewriter: BEAM enters its functions past their
# start and calls them recursively there; callgrind records those as calls, and the
# rewrite must keep every one (tests/programs/cg_invariants.c checks totals, costs, call
# edges and counts, identities). Both symbol sources: the perf map Erlang writes with 0x
# before its numbers, and its jitdump. Default options, then --separate-callers=2 with
# --dump-instr=yes.
# tier: slow
. "$(dirname "$0")/lib.sh"
require_tool erl erlang-base
require_tool valgrind valgrind
cd "$T"
# --fair-sched=yes: valgrind runs one thread at a time, and its default lock is not fair.
# A BEAM scheduler spinning for another thread's work re-took it each time and starved
# that thread: one erl ran 13 minutes (in CI twice; 18 s by hand), 258 s of CPU in one
# scheduler thread while the others waited on valgrind's pipe lock.
run() { # NAME callgrind-options...
    local name=$1; shift
    valgrind -q --tool=callgrind --fair-sched=yes --trace-children=yes "$@" --callgrind-out-file="$T/$name.%p" \
        erl +JPperf true -noshell -eval 'io:format("~p~n", [lists:sum(lists:seq(1, 1000))]), halt().' >out
    grep -qx 500500 out || fail "erl under callgrind"
    # beam.smp's profile: the one whose process wrote the map
    local f pid
    for f in "$T/$name".*; do
        pid=${f##*.}
        if [ -f "/tmp/perf-$pid.map" ]; then
            at_exit "rm -f /tmp/perf-$pid.map /tmp/jit-$pid.dump"
            mv "/tmp/perf-$pid.map" "/tmp/jit-$pid.dump" "$T/"
            mv "$f" "$T/$name.out"
            echo "$pid"
            return
        fi
    done
    fail "no beam.smp profile with a perf map"
}
pid=$(run plain)
grep -q '^fn=.*0x' plain.out || fail "no address-named code in the profile"
cg_rewrite_check plain.out --map "perf-$pid.map"
grep -q 'functions' plain.out.log
cg_rewrite_check plain.out --jitdump "jit-$pid.dump"
# Erlang's JIT code is a sliver of this run (0.00-0.01% each): callgrind_annotate's default
# threshold (99% of the cost) lists it in some runs and not in others, so list everything.
callgrind_annotate --threshold=100 plain.out.named >plain.out.all 2>/dev/null
grep -E '^ *[0-9,]+ .*[a-z_]+\.erl:[a-z_]+:[a-z_]+/[0-9].* \[jit-[0-9]+\.dump\]' plain.out.all | head -3 |
    grep -q . || fail "no Erlang function named with its file"
pid=$(run sc --separate-callers=2 --dump-instr=yes)
cg_rewrite_check sc.out --jitdump "jit-$pid.dump"
echo PASS
