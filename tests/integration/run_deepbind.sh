#!/usr/bin/env bash
# run_deepbind.sh — a VM whose JIT is a plugin loaded with RTLD_DEEPBIND (as PHP loads
# opcache.so; tests/programs/run_deepbind.c): under `jitherald run -c gdb` its perf map
# line is heard and a pending gdb breakpoint on its function hits (adapters/preload/
# deepbind.c rebinds the plugin's fopen/fprintf to the preload's, BIND_NOW + RELRO GOT
# included); the program's own dlopen of the plugin by bare name, through its RUNPATH,
# still works under the interposed dlopen (exit status 0).
. "$(dirname "$0")/lib.sh"
require_tool gdb gdb
P=$(program run_deepbind)
cd "$T"

JITHERALD_DEBUG=1 timeout 60 "$CLI" run -c gdb -- "$P" > alone.out 2>&1 ||
    { cat alone.out; fail "the program failed under jitherald run"; }
cat alone.out
grep -q 'run_deepbind_vm.so loaded with RTLD_DEEPBIND: [1-9][0-9]* of its calls bound' alone.out ||
    fail "the RTLD_DEEPBIND load was not rebound"
grep -Eq 'map_lines=1 .*announced=1 ' alone.out || fail "the plugin's perf map line was not heard"
echo "PASS the plugin's perf map is heard; the bare-name dlopen still finds it"

timeout 120 "$CLI" run -c gdb -- gdb -q -nx -batch -ex 'set breakpoint pending on' \
    -ex 'break deepbind_fn' -ex run -ex bt -ex continue "$P" > gdb.out 2>&1 || true
cat gdb.out
grep -Eq '^Breakpoint 1, 0x[0-9a-f]+ in deepbind_fn \(\)' gdb.out ||
    fail "the pending breakpoint on the plugin's JIT function never hit"
grep -Eq '^#1 +0x[0-9a-f]+ in vm_run \(\)' gdb.out || fail "bt does not go from it to vm_run"
grep -q 'exited normally' gdb.out || fail "the program did not end well under gdb"
echo "PASS gdb breaks in the DEEPBIND plugin's JIT code by name"
echo PASS
