#!/usr/bin/env bash
# `gdb -p` at a moment of its own choosing on a JIT that keeps compiling
# (tests/programs/gdb_grow_attach.c): with no debugger the gdb channel appends each
# function to one growing image, which gdb reads once, when it stops the process, wherever
# the process was (halfway through an append, likely). Every function added before the
# attach is named with its line (the first, one in the middle, the last whose jh_code_add
# returned); `break late`, a function added after the attach, hits, with a backtrace to
# main; gdb says no warning (BFD or DWARF) about any image. Three attaches, at different
# moments.
. "$(dirname "$0")/lib.sh"
require_tool gdb gdb
[ "$(uname -m)" = x86_64 ] || skip "the test JIT's code is x86-64"
P=$(program gdb_grow_attach)

attach_once() { # name delay-seconds
    local name=$1 o=$T/$1
    rm -f "$T/pid" "$T/stop"
    JITHERALD=gdb "$P" "$T/pid" "$T/stop" > "$o.vm" 2>&1 &
    local vm=$!
    kill_at_exit $vm
    wait_for_file "$T/pid" || { cat "$o.vm"; exit 1; }
    sleep "$2"
    timeout 300 gdb -q -nx -batch -p "$(cat "$T/pid")" -ex 'set pagination off' \
        -ex 'set breakpoint pending on' \
        -ex 'printf "ADDED %d\n", added' \
        -ex 'info symbol code_top - 64' \
        -ex 'info symbol code_top - 64 * (added / 2)' \
        -ex 'info symbol code_top - 64 * added' \
        -ex 'info line *(code_top - 64 * added)' \
        -ex 'break late' -ex "shell touch $T/stop" -ex continue -ex bt \
        -ex continue > "$o" 2>&1 || true
    touch "$T/stop"                     # gdb may have stopped early: never leave it running
    wait_gone $vm || { cat "$o"; fail "$name: the JIT still runs"; }
    wait $vm || { cat "$o" "$o.vm"; fail "$name: the JIT exited $?"; }
    cat "$o" "$o.vm"
    local n; n=$(sed -n 's/^ADDED \([0-9]*\)$/\1/p' "$o")
    [ -n "$n" ] && [ "$n" -gt 2000 ] || fail "$name: no count of functions read"
    grep -q '^g0 in section \.text of <in-memory@0x' "$o" || fail "$name: g0 not named"
    grep -q "^g$((n / 2 - 1)) in section \.text" "$o" || fail "$name: g$((n / 2 - 1)) not named"
    grep -q "^g$((n - 1)) in section \.text" "$o" || fail "$name: g$((n - 1)), the last, not named"
    # ...from the growing image (its own mapping: one of its two views, at the mapping's
    # start or 64 bytes in; a one-function image, as before it, is a malloc'd block)
    grep -Eq "^g$((n - 1)) in section \.text of <in-memory@0x[0-9a-f]+0[04]0>" "$o" ||
        fail "$name: g$((n - 1)) is not in the growing image"
    grep -Eq "^Line $n of \"grow\.lua\" starts at address 0x[0-9a-f]+ <g$((n - 1))>" "$o" ||
        fail "$name: no line for g$((n - 1))"
    grep -Eq '^Breakpoint 1, (0x[0-9a-f]+ in )?late \(\) at grow\.lua:10000000[01]' "$o" ||
        fail "$name: the breakpoint on late, added after the attach, did not hit"
    grep -Eq '^#1  0x[0-9a-f]+ in main ' "$o" || fail "$name: the backtrace does not reach main"
    grep -q '^late ran' "$o.vm" || fail "$name: the JIT did not finish"
    ! grep -i -e 'warning' -e 'error' -e 'complaint' "$o" | grep -v 'Error while reading shared library symbols' ||
        fail "$name: gdb warned"
    echo "PASS $name (attached after $n functions)"
}

attach_once early 0
attach_once later 0.7
attach_once late 1.9

# The same through LLDB 14, which reads the list on attach, loses it, and reads every image
# again when jitherald announces them anew (gdb_jit.c): at the first add after the attach,
# which registers a copy of the growing image.
if command -v lldb >/dev/null 2>&1; then
    rm -f "$T/pid" "$T/stop"
    JITHERALD=gdb "$P" "$T/pid" "$T/stop" > "$T/lldb.vm" 2>&1 &
    vm=$!
    kill_at_exit $vm
    wait_for_file "$T/pid" || { cat "$T/lldb.vm"; exit 1; }
    sleep 0.5
    timeout 300 lldb --no-lldbinit -b -p "$(cat "$T/pid")" -o 'b late' \
        -o "platform shell touch $T/stop" -o continue -o bt -o 'p added' \
        -o 'image lookup -s g0' -o 'image lookup -a "code_top - 64 * added"' \
        -o continue > "$T/lldb" 2>&1 || true
    touch "$T/stop"
    wait_gone $vm || fail "lldb: the JIT still runs"
    cat "$T/lldb" "$T/lldb.vm"
    n=$(sed -n 's/^(volatile long) \$0 = \([0-9]*\)$/\1/p' "$T/lldb")
    [ -n "$n" ] || fail "lldb: no count of functions read"
    grep -Eq 'stop reason = breakpoint 1\.1' "$T/lldb" || fail "lldb: late did not hit"
    grep -Eq 'frame #0: 0x[0-9a-f]+ JIT\(0x[0-9a-f]+\)`late at grow\.lua:10000000[01]' "$T/lldb" ||
        fail "lldb: frame #0 is not late"
    grep -Eq 'Summary: JIT\(0x[0-9a-f]+\)`g0 at grow\.lua:1$' "$T/lldb" || fail "lldb: g0"
    grep -Eq "Summary: JIT\\(0x[0-9a-f]+\\)\`g$((n - 1)) at grow\\.lua:$n\$" "$T/lldb" ||
        fail "lldb: g$((n - 1))"
    grep -q '^late ran' "$T/lldb.vm" || fail "lldb: the JIT did not finish"
    echo "PASS lldb (attached after $n functions)"
else
    echo "lldb missing (Debian package lldb): its part not run"
fi
