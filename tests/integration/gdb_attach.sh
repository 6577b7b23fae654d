#!/usr/bin/env bash
# `gdb -p` on a JIT that registered its code before the attach sees all of it: gdb walks
# the whole list on attach. The demo JIT compiles and announces, writes its pid and waits
# (--pause-file); gdb attaches, names the functions and their lines at once, then lets it
# run into a breakpoint and shows the whole JIT backtrace. In both modes, and with a
# program of 3,000 functions (packed images, several size classes) for the default one.
. "$(dirname "$0")/lib.sh"
require_tool gdb gdb

# calls.mini plus 3,000 small functions before it, so c/b/a/main land in a late image
{
    for i in $(seq 0 2999); do printf 'fn g%d(x) {\n    return x + %d\n}\n' "$i" "$i"; done
    cat "$MINI/calls.mini"
} > "$T/big.mini"

attach_once() { # name program defer line-offset
    local name=$1 prog=$2 defer=$3 d=$4
    rm -f "$T/pause"
    JITHERALD=gdb JITHERALD_GDB_DEFER=$defer "$MINIJIT" --pause-file "$T/pause" \
        "$prog" > "$T/$name.vm" 2>&1 &
    local vm=$!
    kill_at_exit $vm
    wait_for_file "$T/pause" || { cat "$T/$name.vm"; exit 1; }
    timeout 120 gdb -q -nx -batch -p "$(cat "$T/pause")" \
        -ex 'set pagination off' -ex 'info line c' -ex 'info symbol a' -ex 'info line g2999' \
        -ex 'break mj__builtin_callback' -ex "shell rm -f $T/pause" -ex continue -ex bt \
        -ex detach > "$T/$name" 2>&1 || true
    rm -f "$T/pause"                    # gdb may have stopped early: never leave it waiting
    wait_gone $vm || { cat "$T/$name"; fail "minijit still running"; }
    wait $vm || { cat "$T/$name" "$T/$name.vm"; fail "minijit exited $?"; }
    cat "$T/$name"
    local o=$T/$name
    # known right after the attach, before the process ran any further
    grep -Eq "^Line $((d + 5)) of \".*\.mini\" starts at address 0x[0-9a-f]+ <c>" "$o"
    grep -Eq '^a in section \.text of <in-memory@0x' "$o"
    grep -Eq "^#1  0x[0-9a-f]+ in c \(\) at .*\.mini:$((d + 7))\$" "$o"
    grep -Eq "^#2  0x[0-9a-f]+ in b \(\) at .*\.mini:$((d + 12))\$" "$o"
    grep -Eq "^#3  0x[0-9a-f]+ in a \(\) at .*\.mini:$((d + 17))\$" "$o"
    grep -Eq "^#4  0x[0-9a-f]+ in main \(\) at .*\.mini:$((d + 22))\$" "$o"
    [ "$d" = 0 ] || grep -Eq '^Line 8998 of ".*big\.mini" starts at address 0x[0-9a-f]+ <g2999>' "$o"
    ! grep -q 'Unable to find JITed code' "$o" || fail "gdb: Unable to find JITed code"
    echo "PASS $name"
}

attach_once small "$MINI/calls.mini" 0 0
attach_once deferred "$MINI/calls.mini" 1 0
attach_once big "$T/big.mini" 0 9000     # calls.mini's lines come after 9,000 others
