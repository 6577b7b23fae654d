#!/usr/bin/env bash
# gdb and lldb on `JITHERALD=gdb luajit -l jitherald hot.lua`: `break TRACE_1` (what `bt`
# and -jv show, `TRACE 1`), set before the trace exists, is pending and then hits in
# trace 1, at its first line, in gdb and in lldb; and stopped
# in getpid, called by a side trace, `bt` walks from libc through the trace (named, with the
# line of the call, hot.lua:9) and the interpreter's frame, which the trace runs inside, to
# luajit's main. LuaJIT's own .eh_frame plus the trace's frameless description (CFA =
# rsp + 96 + its own stack adjustment) is what gdb follows.
. "$(dirname "$0")/lib.sh"
require_tool gdb gdb
require_tool lldb lldb
luajit_adapter
cd "$LUAJIT_SCRIPTS"
JITHERALD=gdb timeout 120 gdb -q -nx -batch -ex 'set breakpoint pending on' \
    -ex 'break TRACE_1' -ex run -ex bt -ex delete \
    -ex 'break getpid' -ex 'ignore 2 100' -ex continue -ex bt -ex kill \
    --args luajit -l jitherald hot.lua 1 >"$T/out" 2>&1 || true
o=$T/out
grep -q 'Breakpoint 1 (TRACE_1) pending' "$o" || { cat "$o"; fail "not pending"; }
grep -Eq '^Breakpoint 1, TRACE_1 hot\.lua:7 \(\) at .*hot\.lua:7$' "$o" || { cat "$o"; fail "no hit"; }
# the side trace calling getpid (after a hundred calls it exists: LuaJIT compiles it after
# ten exits), then out through the interpreter's frame to main
awk '/^Breakpoint 2/ { f = 1 } f' "$o" >"$T/bt"
grep -Eq '^#1  0x[0-9a-f]+ in TRACE_[0-9]+ hot\.lua:9 \(\) at .*hot\.lua:9$' "$T/bt" ||
    { cat "$o"; fail "the trace calling getpid is not frame #1"; }
grep -Eq '^#2  0x[0-9a-f]+ in lua_pcall \(\)$' "$T/bt" || { cat "$o"; fail "frame #2 is not lua_pcall"; }
grep -Eq '^#[0-9]+  0x[0-9a-f]+ in main \(\)$' "$T/bt" || { cat "$o"; fail "bt does not reach main"; }

# lldb: the same breakpoint, pending, then stopped in trace 1 at its first line
JITHERALD=gdb timeout 120 lldb --no-lldbinit --batch \
    -o 'settings set plugin.jit-loader.gdb.enable on' -o 'b TRACE_1' -o run -o bt -o kill \
    -- luajit -l jitherald hot.lua 1 >"$T/lldb" 2>&1 || true
grep -q 'Breakpoint 1: no locations (pending)' "$T/lldb" || { cat "$T/lldb"; fail "lldb: not pending"; }
grep -Eq '^ *\* frame #0: 0x[0-9a-f]+ JIT\(0x[0-9a-f]+\)`TRACE_1 hot\.lua:7 at hot\.lua:7$' "$T/lldb" ||
    { cat "$T/lldb"; fail "lldb: did not stop in trace 1 at hot.lua:7"; }
grep -Eq 'frame #[0-9]+: 0x[0-9a-f]+ luajit`main' "$T/lldb" || { cat "$T/lldb"; fail "lldb: bt does not reach main"; }
echo "ok"
