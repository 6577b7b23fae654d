#!/usr/bin/env bash
# callgrind_rakudo.sh — `jitherald callgrind` on MoarVM's JIT (rakudo with
# MVM_JIT_PERF_MAP=1) under callgrind, the report in the KDE valgrind bug that started
# this: JIT frames named from the perf map, entered from MVM_jit_code_enter, every call and
# cost kept (tests/programs/cg_invariants.c). Default options, then --separate-callers=2
# with --dump-instr=yes, where context names hold JIT addresses too.
# tier: slow
. "$(dirname "$0")/lib.sh"
require_tool rakudo rakudo
require_tool valgrind valgrind
cd "$T"
run() { # NAME callgrind-options...
    local name=$1; shift
    # MVM_SPESH_BLOCKING=1: the specializer (which decides what the JIT compiles) runs in a
    # thread of its own; under callgrind's one-thread-at-a-time it reached 9 to 37 frames
    # before exit, and in one run none (no map to check). Blocking, the main thread waits
    # for it: 57-60 frames in every run.
    MVM_SPESH_BLOCKING=1 MVM_JIT_PERF_MAP=1 valgrind -q --tool=callgrind "$@" --callgrind-out-file="$T/$name.out" \
        rakudo -e 'sub f($n) { $n < 2 ?? $n !! f($n - 1) + f($n - 2) }; say f(16)' >out
    grep -qx 987 out || fail "rakudo under callgrind"
    cg_take_map "$name"
}
run plain
cg_rewrite_check plain.out --map "$(cat plain.mapname)"
# every function, not the default 99% of the cost: JIT frames may sit below that line
callgrind_annotate --threshold=100 plain.out.named >plain.out.all 2>/dev/null
grep -E '^ *[0-9,]+ .*\(gen/moar/.*\.nqp:[0-9]+\) \[perf-[0-9]+\.map\]' plain.out.all | head -3 |
    grep -q . || fail "no MoarVM frame named"
run sc --separate-callers=2 --dump-instr=yes
cg_rewrite_check sc.out --map "$(cat sc.mapname)"
grep -q "'MVM_jit_code_enter" sc.out.named || fail "no caller context"
echo PASS
