#!/usr/bin/env bash
# gdb on `JITHERALD=gdb luajit -l jitherald hot.lua`: `break TRACE_1_hot_lua_7`, set before
# the trace exists, is pending and then hits in the trace, at its first line; and stopped
# in getpid, called by a side trace, `bt` walks from libc through the trace (named, with the
# line of the call, hot.lua:9) and the interpreter's frame, which the trace runs inside, to
# luajit's main. LuaJIT's own .eh_frame plus the trace's frameless description (CFA =
# rsp + 96 + its own stack adjustment) is what gdb follows.
. "$(dirname "$0")/lib.sh"
require_tool gdb gdb
luajit_adapter
cd "$LUAJIT_SCRIPTS"
JITHERALD=gdb timeout 120 gdb -q -nx -batch -ex 'set breakpoint pending on' \
    -ex 'break TRACE_1_hot_lua_7' -ex run -ex bt -ex delete \
    -ex 'break getpid' -ex 'ignore 2 100' -ex continue -ex bt -ex kill \
    --args luajit -l jitherald hot.lua 1 >"$T/out" 2>&1 || true
o=$T/out
grep -q 'Breakpoint 1 (TRACE_1_hot_lua_7) pending' "$o" || { cat "$o"; fail "not pending"; }
grep -Eq '^Breakpoint 1, TRACE_1 hot\.lua:7 \(\) at .*hot\.lua:7$' "$o" || { cat "$o"; fail "no hit"; }
# the side trace calling getpid (after a hundred calls it exists: LuaJIT compiles it after
# ten exits), then out through the interpreter's frame to main
awk '/^Breakpoint 2/ { f = 1 } f' "$o" >"$T/bt"
grep -Eq '^#1  0x[0-9a-f]+ in TRACE_[0-9]+ hot\.lua:9 \(\) at .*hot\.lua:9$' "$T/bt" ||
    { cat "$o"; fail "the trace calling getpid is not frame #1"; }
grep -Eq '^#2  0x[0-9a-f]+ in lua_pcall \(\)$' "$T/bt" || { cat "$o"; fail "frame #2 is not lua_pcall"; }
grep -Eq '^#[0-9]+  0x[0-9a-f]+ in main \(\)$' "$T/bt" || { cat "$o"; fail "bt does not reach main"; }
echo "ok"
