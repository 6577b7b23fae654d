#!/usr/bin/env bash
# jh_code_remove keeps gdb's view right: the demo JIT runs main, removes every function
# (--remove), frees the code and compiles again into the same addresses (--recompile).
# After the removal `info symbol` no longer names the old function at its address; after
# the recompile it names the new one again, once, and the backtrace is whole again.
. "$(dirname "$0")/lib.sh"
require_tool gdb gdb

for mode in immediate deferred; do
    defer=0; [ $mode = deferred ] && defer=1
    JITHERALD=gdb JITHERALD_GDB_DEFER=$defer timeout 120 gdb -q -nx -batch \
        -ex 'set pagination off' -ex 'break mj__builtin_callback' -ex run \
        -ex 'frame 1' -ex 'set $c = $pc' -ex 'echo BEFORE\n' -ex 'info symbol $c' \
        -ex 'break mj_free' -ex continue \
        -ex 'echo REMOVED\n' -ex 'info symbol $c' -ex 'info line *$c' -ex 'info symbol a' \
        -ex 'delete 2' -ex continue \
        -ex 'echo AGAIN\n' -ex 'info symbol $c' -ex bt \
        --args "$MINIJIT" --remove --recompile "$MINI/calls.mini" \
        > "$T/$mode" 2>&1 || true
    cat "$T/$mode"
    o=$T/$mode
    sed -n '/^BEFORE/,/^REMOVED/p' "$o" | grep -Eq '^c \+ [0-9]+ in section \.text of <in-memory@0x'
    # removed: the address names nothing, has no line, the name is unknown
    sed -n '/^REMOVED/,/^AGAIN/p' "$o" > "$T/removed"
    grep -q '^No symbol matches \$c\.' "$T/removed"
    grep -q '^No line number information available for address 0x' "$T/removed"
    grep -q 'No symbol "a" in current context' "$T/removed"
    # recompiled at the same address: named again, once, and the chain is whole
    sed -n '/^AGAIN/,$p' "$o" > "$T/again"
    [ "$(grep -Ec '^c \+ [0-9]+ in section \.text of <in-memory@0x' "$T/again")" = 1 ]
    grep -Eq '^#1  0x[0-9a-f]+ in c \(\) at .*calls\.mini:7$' "$T/again"
    grep -Eq '^#4  0x[0-9a-f]+ in main \(\) at .*calls\.mini:22$' "$T/again"
    ! grep -q 'Unable to find JITed code' "$o" || fail "$mode: Unable to find JITed code"
    echo "PASS $mode"
done
