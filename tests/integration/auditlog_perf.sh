#!/usr/bin/env bash
# perf's inputs regenerated from the audit log, after the fact:
#  1. a run recorded with only the audit log: `to-perfmap` written as /tmp/perf-PID.map
#     makes `perf report` name the JIT function the samples fell in;
#  2. a run that had the jitdump channel on: `to-jitdump` regenerates the records the
#     channel wrote (LOAD, DEBUG_INFO, UNWINDING_INFO); its jit-PID.dump replaced by that
#     output is accepted by `jitherald check` and by `perf inject --jit`, and perf report
#     then shows fib in its jitted-*.so with fib.mini source lines, and the line table of
#     that .so is the demo JIT's own, address for address (tests/programs/mj_lines.c).
. "$(dirname "$0")/lib.sh"
require_tool perf linux-perf
private_perf_cache
cd "$T"

# 1. audit log only, perf map afterwards.
JITHERALD=auditlog JITHERALD_DIR=$T perf record -q -N -e cpu-clock -o a.data \
    "$MINIJIT" "$MINI/fib.mini" 32 > /dev/null
log=$(ls minijit-*.jhlog); pid=${log#minijit-}; pid=${pid%.jhlog}
! wrote_perf_map "$pid" || fail "a perf map exists without the perfmap channel"
at_exit "rm -f /tmp/perf-$pid.map"
"$CLI" log "$log" to-perfmap > /tmp/perf-$pid.map
perf report -i a.data --stdio --sort sym 2>/dev/null >rep1
pct=$(share rep1 '\[\.\] fib *$' '\[\.\]')
[ "$pct" -ge 50 ] || { head -20 rep1; fail "fib has $pct% of the user-space samples"; }

# 2. jitdump regenerated from the log, fed to perf inject.
JITHERALD=auditlog,jitdump JITHERALD_DIR=$T perf record -q -N -k 1 -e cpu-clock -o b.data \
    "$MINIJIT" "$MINI/fib.mini" 32 > /dev/null
log=$(ls -t minijit-*.jhlog | head -1); pid=${log#minijit-}; pid=${pid%.jhlog}
mv "jit-$pid.dump" live.dump
"$CLI" log "$log" to-jitdump -o "jit-$pid.dump"
"$CLI" check "jit-$pid.dump"
# The same records the jitdump channel wrote live (timestamps and code_index aside: the
# log's are its record times and its ids).
norm() { "$CLI" inspect "$1" | sed -e 's/ts [0-9]*//' -e 's/^0x[0-9a-f]* //' \
             -e 's/timestamp [0-9]*//' -e 's/ #[0-9]* / # /' -e '$d'; }
diff <(norm live.dump) <(norm "jit-$pid.dump")
grep -q UNWINDING_INFO <(norm "jit-$pid.dump")
perf inject --jit -i b.data -o b.jit.data
perf report -i b.jit.data --stdio --sort sym,dso 2>/dev/null >rep2
pct=$(share rep2 "\\[\\.\\] fib +jitted-$pid-[0-9]+\\.so *\$" '\[\.\]')
[ "$pct" -ge 50 ] || { head -20 rep2; fail "fib in a jitted-$pid-*.so has $pct% of the user-space samples"; }
perf report -i b.jit.data --stdio --sort sym,srcline 2>/dev/null | grep -v '^#' | head -5 | tee rep3
grep -Eq '\] fib +fib\.mini:[5-8]$' rep3 || fail "no fib.mini source line"
# Exactly: the line table perf built from the regenerated DEBUG_INFO is the demo JIT's own,
# address for address (the comparison with the live dump above shares its encoder).
so=$(grep -l fib "jitted-$pid"-*.so | head -1)
diff <(mj_truth_lines "$MINI/fib.mini" fib) <(so_lines "$so") ||
    { readelf -wL "$so"; fail "fib's line table in $so is not the JIT's"; }
echo PASS
