#!/usr/bin/env bash
# A Lua error raised from C inside a trace, five times over pcall, with the unwind channel
# on (alone, and with every channel): each pcall returns the error, and the VM is healthy
# afterwards (a full collectgarbage(), an FFI callback, new traces), exactly as without
# jitherald. In the same runs, first, backtrace() called through the FFI from inside a
# trace walks through it, lua_pcall and the interpreter to luajit's main. LuaJIT covers each code area with one FDE of its own whose
# personality turns an error into a trace exit but which has no CFA rule (libgcc aborts
# a walk there: without jitherald this backtrace() kills the VM). The adapter passes that
# personality with each trace, and the unwind channel describes the trace with it,
# leaving the rest of the area to LuaJIT's FDE (docs/unwind.md). An FDE of jitherald's
# without the personality made LuaJIT panic ("PANIC: unprotected error") at the first
# error; leaving traces to LuaJIT's FDE made the backtrace abort.
. "$(dirname "$0")/lib.sh"
luajit_adapter
cd "$LUAJIT_SCRIPTS"
timeout 60 luajit errors.lua >"$T/plain" 2>&1 || fail "without jitherald: $(cat "$T/plain")"
grep -q '^healthy$' "$T/plain" || fail "the script itself is broken: $(cat "$T/plain")"
[ "$(grep -c 'not enough memory' "$T/plain")" = 5 ] || fail "errors: $(cat "$T/plain")"
for ch in unwind all; do
    JITHERALD=$ch JITHERALD_DIR=$T/d timeout 60 sh -c "$PID_EXEC" "$T/pid" luajit -l jitherald errors.lua bt \
        >"$T/out" 2>"$T/err" || fail "JITHERALD=$ch: exit $?: $(cat "$T/out" "$T/err")"
    rm -f "/tmp/perf-$(cat "$T/pid").map"
    grep '^backtrace' "$T/out"
    grep -Eq '^backtrace	[0-9]+	frames; frame 0 in a trace:	true	lua_pcall at	[0-9]+	main at	[0-9]+$' "$T/out" ||
        fail "JITHERALD=$ch: backtrace() from a trace: $(cat "$T/out" "$T/err")"
    grep -v '^backtrace' "$T/out" | diff -u "$T/plain" - ||
        fail "JITHERALD=$ch: the output differs"
done
echo "ok: same output, healthy VM, backtrace() through traces, with the unwind channel"
