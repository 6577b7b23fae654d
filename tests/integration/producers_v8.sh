#!/usr/bin/env bash
# producers_v8.sh — `jitherald check` and `inspect` on what node 20 (V8) writes, next to
# what perf does with the same files (docs/interop.md has the table of quirks). The
# jitdump (--perf-prof): check exits 0 with the warnings due, --strict exits 1, inspect
# lists as many LOADs as perf inject --jit wrote jitted-*.so files. The perf map
# (--perf-basic-prof): every line read.
. "$(dirname "$0")/lib.sh"
require_tool perf linux-perf
require_tool node nodejs
private_perf_cache
cd "$T"

cat >fib.js <<'JS'
function fib(n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
let s = 0; for (let i = 0; i < 30; i++) s += fib(15);
console.log(s);
JS
cat >fib.js <<'JS'
function fib(n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
let s = 0; for (let i = 0; i < 30; i++) s += fib(15);
console.log(s);
JS
mkdir node && cd node
perf record -q -k 1 -o perf.data node --perf-prof --interpreted-frames-native-stack \
    --perf-basic-prof ../fib.js >out 2>&1 || { cat out; fail "perf record node"; }
pid=$(ls jit-*.dump); pid=${pid#jit-}; pid=${pid%.dump}
at_exit "rm -f /tmp/perf-$pid.map"
mv "/tmp/perf-$pid.map" .
check_quirks "jit-$pid.dump" unwind-empty
# V8's line tables: +0x40 for its own functions, garbage for the script's (which ones it
# optimizes depends on timing)
grep -Eq '\((line-skew-0x40|line-garbage)\)$' check.err || fail "node: no line-table quirk"
n=$(loads); so=$(injected . "$pid")
echo "node: inspect $n LOADs, perf inject $so"
[ "$n" -gt 1000 ] && [ "$n" = "$so" ] || fail "node: $n LOADs, perf inject wrote $so"
[ "$(grep -c ' LOAD ' inspect.out)" = "$n" ] || fail "node: inspect lists fewer LOADs"
map_lines "perf-$pid.map"
cd ..
echo PASS
