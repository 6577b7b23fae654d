#!/usr/bin/env bash
# callgrind_node.sh — `jitherald callgrind` on V8 (node --perf-basic-prof) under
# callgrind: every JIT function named from node's perf map, every call kept (V8 returns
# into the middle of functions and recurses; callgrind records what was a call), with the
# invariants of tests/programs/cg_invariants.c. Default options, then
# --separate-callers=2 with --dump-instr=yes.
# tier: slow
. "$(dirname "$0")/lib.sh"
require_tool node nodejs
require_tool valgrind valgrind
cd "$T"
cat >fib.js <<'JS'
function fib(n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
let s = 0;
for (let i = 0; i < 3; i++) s += fib(15);
console.log(s);
JS
run() { # NAME callgrind-options...
    local name=$1; shift
    valgrind -q --tool=callgrind "$@" --callgrind-out-file="$T/$name.out" \
        node --perf-basic-prof --always-sparkplug fib.js >out
    grep -qx 1830 out || fail "node under callgrind"
    cg_take_map "$name"
}
run plain
cg_rewrite_check plain.out --map "$(cat plain.mapname)"
grep -E '^ *[0-9,]+ .*:JS:\^fib .*\[perf-[0-9]+\.map\]' plain.out.ann | head -3 | grep -q . || fail "fib not named"
run sc --separate-callers=2 --dump-instr=yes
cg_rewrite_check sc.out --map "$(cat sc.mapname)"
echo PASS
