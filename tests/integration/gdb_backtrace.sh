#!/usr/bin/env bash
# gdb through the JIT interface on the demo JIT: a pending breakpoint on a JIT function
# (`break c` before `run`) hits; the backtrace names every JIT frame with calls.mini:LINE
# down to the C main; `info line *$pc`, `disassemble`, `up`, `finish` work. Run twice:
# the default (immediate) mode and the deferred mode (JITHERALD_GDB_DEFER=1, minijit
# flushes before running main), then with every channel on.
. "$(dirname "$0")/lib.sh"
require_tool gdb gdb

run_gdb() { # mode-env... -- output file
    env JITHERALD=gdb "$@" timeout 120 gdb -q -nx -batch \
        -ex 'set breakpoint pending on' -ex 'set pagination off' \
        -ex 'break c' -ex run -ex 'info inferiors' -ex bt -ex 'info line *$pc' \
        -ex 'disassemble a' -ex 'info symbol a' -ex 'list c' \
        -ex 'break mj__builtin_callback' -ex continue -ex bt \
        -ex 'echo @up\n' -ex up -ex 'info frame' -ex 'echo @up2\n' -ex up \
        -ex 'echo @down\n' -ex down -ex 'echo @finish\n' -ex finish -ex 'echo @end\n' \
        --args "$MINIJIT" "$MINI/calls.mini" 2>&1
}

check() { # file
    local o=$1
    # the pending breakpoint resolved and hit, after the prologue, at the first statement
    grep -q 'Breakpoint 1 (c) pending' "$o"
    grep -Eq '(^|hit )Breakpoint 1, c \(\) at .*calls\.mini:6' "$o"
    # the whole chain, each frame with its file:line, down to the host's main
    grep -Eq '^#0  c \(\) at .*calls\.mini:6$' "$o"
    grep -Eq '^#1  0x[0-9a-f]+ in b \(\) at .*calls\.mini:12$' "$o"
    grep -Eq '^#2  0x[0-9a-f]+ in a \(\) at .*calls\.mini:17$' "$o"
    grep -Eq '^#3  0x[0-9a-f]+ in main \(\) at .*calls\.mini:22$' "$o"
    grep -Eq '^#4  0x[0-9a-f]+ in mj_call ' "$o"
    grep -Eq '^#[0-9]+ +0x[0-9a-f]+ in main \(argc=' "$o"
    grep -Eq '^Line 6 of ".*calls\.mini" starts at address 0x[0-9a-f]+ <c\+[0-9]+>' "$o"
    grep -q 'Dump of assembler code for function a:' "$o"
    grep -Eq '<\+0>:.push +%rbp' "$o"
    grep -Eq '^a in section \.text of <in-memory@0x' "$o"
    grep -Eq '^5\s+fn c\(x\) \{' "$o"                 # `list c` shows the JIT source
    # from C code called by JIT code: unwinding back through the JIT frames
    grep -Eq '^#1  0x[0-9a-f]+ in c \(\) at .*calls\.mini:7$' "$o"
    grep -Eq '^#2  0x[0-9a-f]+ in b \(\) at .*calls\.mini:12$' "$o"
    grep -Eq '^#4  0x[0-9a-f]+ in main \(\) at .*calls\.mini:22$' "$o"
    # each command's own output (between the echo markers): `up` into c, its source line
    # shown from the file; `up` again into b; `down` back into c; `finish` returns into b
    sect() { sed -n "/^@$1\$/,/^@/p" "$o"; }
    sect up | grep -Eq '^#1  0x[0-9a-f]+ in c \(\) at .*calls\.mini:7$' || fail "$o: up"
    sect up | grep -Eq '^7\s+return callback\(y \+ 1\)' || fail "$o: up: no source"
    sect up | grep -Eq '^Stack level 1, frame at 0x' || fail "$o: info frame"
    sect up2 | grep -Eq '^#2  0x[0-9a-f]+ in b \(\) at .*calls\.mini:12$' || fail "$o: up twice"
    sect up2 | grep -Eq '^12\s+return c\(t\) \+ 1' || fail "$o: up twice: no source"
    sect down | grep -Eq '^#1  0x[0-9a-f]+ in c \(\) at .*calls\.mini:7$' || fail "$o: down"
    sect finish | grep -Eq '^0x[0-9a-f]+ in b \(\) at .*calls\.mini:12$' || fail "$o: finish: not back in b"
    ! grep -Eq '^#[0-9]+ +0x[0-9a-f]+ in \?\? \(\)' "$o" || fail "$o: a frame without a name"
    ! grep -q 'outside of ELF segments' "$o" || fail "$o: outside of ELF segments"
    ! grep -q 'Unable to find JITed code' "$o" || fail "$o: Unable to find JITed code"
}

# (check runs as a plain command: called in an `||` list, `set -e` would not stop at the
# greps inside it)
run_gdb JITHERALD_GDB_DEFER=0 > "$T/immediate"
cat "$T/immediate"
check "$T/immediate"
run_gdb JITHERALD_GDB_DEFER=1 > "$T/deferred"
cat "$T/deferred"
check "$T/deferred"
# every channel at once: elfmap swaps the code pages for file mappings while gdb has
# breakpoints in them, the unwind channel registers the same code with libgcc
mkdir "$T/dir"
run_gdb JITHERALD=all JITHERALD_DIR="$T/dir" > "$T/all"
pid=$(sed -n 's/^\* 1 \+process \([0-9]\+\) .*/\1/p' "$T/all")
[ -n "$pid" ] || fail "gdb's info inferiors: no pid"
at_exit "rm -f /tmp/perf-$pid.map"             # the perfmap channel's, of that run
cat "$T/all"
check "$T/all"
echo PASS
