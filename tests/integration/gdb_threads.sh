#!/usr/bin/env bash
# Four threads compile their own copy of calls.mini at the same time (16 functions
# registered concurrently into one list, merged into one image on the way) and run it.
# At several stops in the callback, every frame of every thread that is in JIT code is
# named with its calls.mini line: no `?? ()` anywhere.
. "$(dirname "$0")/lib.sh"
require_tool gdb gdb
JITHERALD=gdb JITHERALD_GDB_DEFER=0 timeout 120 gdb -q -nx -batch -ex 'set pagination off' \
    -ex 'break mj__builtin_callback' -ex run -ex 'thread apply all bt' \
    -ex continue -ex 'thread apply all bt' -ex continue -ex 'thread apply all bt' \
    --args "$MINIJIT" --threads 4 --repeat 20 "$MINI/calls.mini" \
    > "$T/out" 2>&1 || true
cat "$T/out"
stops=$(grep -c 'hit Breakpoint 1, mj__builtin_callback' "$T/out")
chains=$(grep -Ec '^#4  0x[0-9a-f]+ in main \(\) at .*calls\.mini:22$' "$T/out")
echo "stops=$stops full chains=$chains"
[ "$stops" -eq 3 ]
[ "$chains" -ge 3 ]
grep -Eq '^#1  0x[0-9a-f]+ in c \(\) at .*calls\.mini:7$' "$T/out"
! grep -Eq '^#[0-9]+ +0x[0-9a-f]+ in \?\? \(\)' "$T/out" || fail "a frame without a name"
echo PASS
