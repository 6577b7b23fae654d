#!/usr/bin/env bash
# gdb attaching to an LLVM JIT after 5,000 modules sees every one of them (issue 30: the
# adapter may defer work no tool has asked for, but not what an attaching debugger reads).
# bench/llvm/modules compiles 5,000 one-function modules with DWARF through ORC
# (RuntimeDyld with the adapter's listener, then JITLink with its ORC plugin; JITHERALD=gdb,
# no debugger: each module registered as LLVM's own debug object), writes its pid and
# waits; gdb attaches, finds an early and the last function's line at once (read from
# those objects), sets breakpoints on both and on a function not compiled yet, then lets
# the JIT compile 3 more modules (described into jitherald's images: a debugger listens)
# and call every function again, and shows the backtrace at each stop. No timing is
# asserted.
. "$(dirname "$0")/lib.sh"
require_tool gdb gdb
MOD=$B/bench/llvm/modules
[ -x "$MOD" ] || { [ -z "$(command -v llvm-config-14)" ] && skip "llvm-config-14 not installed (llvm-14-dev)"; }
[ -x "$MOD" ] || fail "$MOD not built (make tests)"
N=${JH_TEST_LLVM_MODULES:-5000}
MORE=3
LAST=$((N - 1))
NEW=$((N + MORE - 1))

for mode in jitherald jitherald-link; do
    rm -f "$T/pause"
    JITHERALD=gdb JITHERALD_DEBUG=1 JH_BENCH_O0=1 JH_BENCH_PAUSE=$T/pause JH_BENCH_MORE=$MORE \
        "$MOD" $mode "$N" > "$T/vm" 2>&1 &
    vm=$!
    kill_at_exit $vm
    wait_for_file "$T/pause" 600 || { cat "$T/vm"; exit 1; }
    timeout 900 gdb -q -nx -batch -p "$(cat "$T/pause")" -ex 'set pagination off' \
        -ex 'set breakpoint pending on' \
        -ex 'info line f17' -ex "info line f$LAST" -ex 'break f17' -ex "break f$LAST" \
        -ex "break f$NEW" -ex "shell rm -f $T/pause" -ex continue -ex bt -ex continue -ex bt \
        -ex continue -ex bt -ex 'info breakpoints' -ex detach > "$T/gdb" 2>&1 || true
    rm -f "$T/pause"                # gdb may have stopped early: never leave it waiting
    wait_gone $vm 300 || { cat "$T/gdb"; fail "$mode: the JIT is still running"; }
    wait $vm || { cat "$T/gdb" "$T/vm"; fail "$mode: the JIT exited $?"; }
    grep -v '^\[' "$T/gdb"
    grep -v '^jitherald-llvm: object' "$T/vm"
    o=$T/gdb
    # read from the list the moment gdb attached, before the JIT ran again
    grep -Eq '^Line [23] of "(/jit/)?f17\.src" starts at address 0x[0-9a-f]+ <f17(\+[0-9]+)?>' "$o" ||
        fail "$mode: gdb found no line for f17 on attach"
    grep -Eq "^Line [23] of \"(/jit/)?f$LAST\\.src\" starts at address 0x[0-9a-f]+ <f$LAST(\\+[0-9]+)?>" "$o" ||
        fail "$mode: gdb found no line for f$LAST on attach"
    grep -Eq '^Breakpoint 1 at 0x[0-9a-f]+: file (/jit/)?f17\.src, line [23]\.' "$o" ||
        fail "$mode: break f17 was not placed in JIT code"
    # the modules compiled under gdb were described (a debugger listens), the others not
    [ "$(grep -c '^jitherald-llvm: object 0x[0-9a-f]*: 1 functions, 1 files, 1 with unwind rules' "$T/vm")" = $MORE ] ||
        fail "$mode: not exactly the $MORE modules compiled under gdb were described"
    # the three stops, each with the JIT frame innermost and the host's main under it
    for f in f17 "f$LAST" "f$NEW"; do
        grep -Eq "^#0  $f \\(.*\\) at (/jit/)?$f\\.src:[23]\$" "$o" || fail "$mode: no stop in $f with its file:line"
    done
    [ "$(grep -Ec '^#1  0x[0-9a-f]+ in main \(' "$o")" = 3 ] || fail "$mode: bt did not reach main from every stop"
    # each function in one place: in its object or in an image, never both
    ! grep -q '<MULTIPLE>' "$o" || fail "$mode: a breakpoint has several locations (described and left registered?)"
    grep -q '^called again: check ' "$T/vm" || fail "$mode: the JIT did not finish"
    ! grep -q 'Unable to find JITed code' "$o" || fail "$mode: gdb: Unable to find JITed code"
    echo "ok $mode: gdb attached after $N modules"
done
echo "PASS gdb attached after $N modules, RuntimeDyld and JITLink"
