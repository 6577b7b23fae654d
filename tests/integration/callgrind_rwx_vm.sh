#!/usr/bin/env bash
# callgrind_rwx_vm.sh — a real VM with RWX code (node 20) under `jitherald run -c elfmap` and
# callgrind: elfmap must leave its code as it is (an unmodified VM writes its RWX pages from
# any thread, with no lock elfmap could keep: docs/elfmap.md, "Writable and shared code
# pages"), say so once with the reason, and change nothing of the run; the offline fallback
# (`jitherald callgrind --map`) names its JIT instructions afterwards. The live share is
# 0% by design here (bench/callgrind_live.sh prints it per VM); a swap of node's pages
# would show as JIT instructions attributed to an image, which this test refuses.
# tier: slow
. "$(dirname "$0")/lib.sh"
require_tool node nodejs
require_tool valgrind valgrind
cd "$T"
cat > fib.js <<'JS'
function fib(n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
let s = 0;
for (let i = 0; i < 3; i++) s += fib(15);
console.log(s);
JS
JITHERALD_DIR=$T/d "$CLI" run -c elfmap -- valgrind -q --tool=callgrind \
    --callgrind-out-file=cg.out node --perf-basic-prof --always-sparkplug fib.js > out 2> err ||
    { cat err; fail "node under jitherald run and callgrind"; }
grep -qx 1830 out || fail "node's result: $(cat out)"
pid=$(sed -n 's/^pid: //p' cg.out)
at_exit "rm -f /tmp/perf-$pid.map"
mkdir m && mv "/tmp/perf-$pid.map" m/
[ "$(grep -c 'elfmap: code at .* the pages are writable' err)" = 1 ] ||
    { cat err; fail "elfmap's note on node's RWX pages not said exactly once"; }
callgrind_annotate --threshold=100 cg.out > live.ann
perl "$R/tests/integration/cg_named.pl" "m/perf-$pid.map" live.ann | tee live.share || true
grep -q '^JIT instructions: 0 named, [1-9][0-9]* by address' live.share ||
    fail "node's RWX code named live: a page was swapped"
"$CLI" callgrind --map "m/perf-$pid.map" cg.out named.out 2> cb.err || { cat cb.err; fail "jitherald callgrind"; }
callgrind_annotate --threshold=100 named.out > off.ann
perl "$R/tests/integration/cg_named.pl" --offline "m/perf-$pid.map" off.ann 99 ||
    fail "the offline fallback names less than 99% of node's JIT instructions"
grep -E '^ *[0-9,]+ .*:JS:\^fib .*\[perf-[0-9]+\.map\]' off.ann | head -2 | grep -q . || fail "fib not named offline"
echo PASS
