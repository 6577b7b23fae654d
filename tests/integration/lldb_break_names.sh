#!/usr/bin/env bash
# gdb_break_names.sh with lldb: `b TRACE_1_x_lua_10` before the code exists resolves when
# it is announced and stops once, at prologue_end (x.lua:10); the backtrace shows the
# display name down to main. The control without prologue_end stops on the loop head.
. "$(dirname "$0")/lib.sh"
require_tool lldb lldb
P=$(program gdb_names)

run_lldb() { # args... (of the program)
    JITHERALD=gdb timeout 120 lldb --no-lldbinit --batch \
        -o 'settings set plugin.jit-loader.gdb.enable on' -o 'b TRACE_1_x_lua_10' -o run \
        -o bt -o continue -o continue -- "$P" "$@" 2>&1 || true
}

run_lldb >"$T/out"
hits=$(grep -c 'stop reason = breakpoint 1' "$T/out" || true)
# lldb prints the stop twice (at the stop, and for `bt`)
[ "$hits" = 2 ] || { cat "$T/out"; fail "stopped $hits/2 times, want once"; }
grep -Eq 'frame #0: 0x[0-9a-f]+ JIT\(0x[0-9a-f]+\)`TRACE_1 x\.lua:10 at x\.lua:10$' "$T/out" ||
    { cat "$T/out"; fail "frame #0"; }
grep -Eq 'frame #2: 0x[0-9a-f]+ gdb_names`main' "$T/out" || { cat "$T/out"; fail "main"; }
grep -q 'exited with status = 0' "$T/out" || { cat "$T/out"; fail "did not finish"; }

run_lldb no-prologue-end >"$T/control"
grep -Eq 'frame #0: 0x[0-9a-f]+ JIT\(0x[0-9a-f]+\)`TRACE_1 x\.lua:10 at x\.lua:11$' "$T/control" ||
    { cat "$T/control"; fail "control: not on the loop head"; }
echo "ok"
