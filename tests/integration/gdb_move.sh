#!/usr/bin/env bash
# jh_code_move keeps gdb's and lldb's view right: a small C program announces two
# functions, copies one elsewhere and calls jh_code_move, then stops. The debugger names
# the new address (with its line) and no longer the old one; the other function is
# untouched. Then the moved function is removed: its name is gone after jh_flush.
. "$(dirname "$0")/lib.sh"
require_tool gdb gdb
MOVE=$(program gdb_move)      # tests/programs/gdb_move.c
JITHERALD=gdb timeout 120 gdb -q -nx -batch -ex 'break stop_here' -ex run \
    -ex 'echo MOVED\n' -ex 'info symbol new_code' -ex 'info symbol old_code' \
    -ex 'info line *(new_code+4)' -ex 'info symbol other' -ex continue \
    -ex 'echo REMOVED\n' -ex 'info symbol new_code' -ex 'info symbol other' \
    "$MOVE" > "$T/gdb" 2>&1 || true
cat "$T/gdb"
sed -n '/^MOVED/,/^REMOVED/p' "$T/gdb" > "$T/moved"
grep -Eq '^wanderer in section \.text of <in-memory@0x' "$T/moved"
grep -q '^No symbol matches old_code\.' "$T/moved"
grep -Eq '^Line 11 of "move\.src" starts at address 0x[0-9a-f]+ <wanderer\+4>' "$T/moved"
grep -Eq '^stayer in section \.text of <in-memory@0x' "$T/moved"
sed -n '/^REMOVED/,$p' "$T/gdb" > "$T/removed"
grep -q '^No symbol matches new_code\.' "$T/removed"
grep -Eq '^stayer in section \.text of <in-memory@0x' "$T/removed"
echo "PASS gdb"

# the same through lldb: a skip (loud) where lldb is missing, never a silent pass
require_tool lldb lldb
JITHERALD=gdb timeout 120 lldb --no-lldbinit -b -o 'b stop_here' -o run \
    -o 'image lookup -a new_code' -o 'image lookup -a other' -- "$MOVE" > "$T/lldb" 2>&1 || true
cat "$T/lldb"
grep -Eq 'Summary: JIT\(0x[0-9a-f]+\)`wanderer at move\.src:10' "$T/lldb"
grep -Eq 'Summary: JIT\(0x[0-9a-f]+\)`stayer at move\.src:10' "$T/lldb"
echo "PASS lldb"
