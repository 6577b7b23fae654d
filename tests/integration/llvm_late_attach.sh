#!/usr/bin/env bash
# gdb attaching to an LLVM JIT after 5,000 modules sees every one of them (issue 30: the
# adapter may defer work no tool has asked for, but not what an attaching debugger reads).
# bench/llvm/modules compiles 5,000 one-function modules with DWARF through ORC
# (RuntimeDyld, the adapter's listener, JITHERALD=gdb, no debugger), writes its pid and
# waits; gdb attaches, finds an early and the last function's line at once, sets
# breakpoints on both, lets the JIT call every function again and shows the backtrace at
# each stop. No timing is asserted.
. "$(dirname "$0")/lib.sh"
require_tool gdb gdb
MOD=$B/bench/llvm/modules
[ -x "$MOD" ] || { [ -z "$(command -v llvm-config-14)" ] && skip "llvm-config-14 not installed (llvm-14-dev)"; }
[ -x "$MOD" ] || fail "$MOD not built (make tests)"
N=${JH_TEST_LLVM_MODULES:-5000}
LAST=$((N - 1))

JITHERALD=gdb JH_BENCH_O0=1 JH_BENCH_PAUSE=$T/pause "$MOD" jitherald "$N" > "$T/vm" 2>&1 &
vm=$!
kill_at_exit $vm
wait_for_file "$T/pause" 600 || { cat "$T/vm"; exit 1; }
timeout 600 gdb -q -nx -batch -p "$(cat "$T/pause")" -ex 'set pagination off' \
    -ex 'info line f17' -ex "info line f$LAST" -ex 'break f17' -ex "break f$LAST" \
    -ex "shell rm -f $T/pause" -ex continue -ex bt -ex continue -ex bt -ex detach \
    > "$T/gdb" 2>&1 || true
rm -f "$T/pause"                    # gdb may have stopped early: never leave it waiting
wait_gone $vm 120 || { cat "$T/gdb"; fail "the JIT is still running"; }
wait $vm || { cat "$T/gdb" "$T/vm"; fail "the JIT exited $?"; }
grep -v '^\[' "$T/gdb"
cat "$T/vm"
o=$T/gdb
# read from the list the moment gdb attached, before the JIT ran again
grep -Eq '^Line [23] of "(/jit/)?f17\.src" starts at address 0x[0-9a-f]+ <f17(\+[0-9]+)?>' "$o" ||
    fail "gdb found no line for f17 on attach"
grep -Eq "^Line [23] of \"(/jit/)?f$LAST\\.src\" starts at address 0x[0-9a-f]+ <f$LAST(\\+[0-9]+)?>" "$o" ||
    fail "gdb found no line for f$LAST on attach"
grep -Eq '^Breakpoint 1 at 0x[0-9a-f]+: file (/jit/)?f17\.src, line [23]\.' "$o" ||
    fail "break f17 was not placed in JIT code"
# both stops, each with the JIT frame innermost and the host's main under it
for f in f17 "f$LAST"; do
    grep -Eq "^#0  $f \\(.*\\) at (/jit/)?$f\\.src:[23]\$" "$o" || fail "no stop in $f with its file:line"
done
[ "$(grep -Ec '^#1  0x[0-9a-f]+ in main \(' "$o")" = 2 ] || fail "bt did not reach main from both stops"
grep -q '^called again: check ' "$T/vm" || fail "the JIT did not finish"
! grep -q 'Unable to find JITed code' "$o" || fail "gdb: Unable to find JITed code"
echo "PASS gdb attached after $N modules"
