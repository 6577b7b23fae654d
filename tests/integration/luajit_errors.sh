#!/usr/bin/env bash
# A Lua error raised from C inside a trace, five times over pcall, with the unwind channel
# on (alone, and with every channel but elfmap): each pcall returns the error, and the VM
# is healthy afterwards (a full collectgarbage(), an FFI callback, new traces), exactly as
# without jitherald. LuaJIT's own unwind registration covers its traces; the unwind
# channel must leave it alone (docs/unwind.md). With the channel shadowing it, LuaJIT
# panicked here ("PANIC: unprotected error") after the first error.
. "$(dirname "$0")/lib.sh"
luajit_adapter
cd "$LUAJIT_SCRIPTS"
timeout 60 luajit errors.lua >"$T/plain" 2>&1 || fail "without jitherald: $(cat "$T/plain")"
grep -q '^healthy$' "$T/plain" || fail "the script itself is broken: $(cat "$T/plain")"
[ "$(grep -c 'not enough memory' "$T/plain")" = 5 ] || fail "errors: $(cat "$T/plain")"
for ch in unwind perfmap,jitdump,gdb,unwind,auditlog; do
    JITHERALD=$ch JITHERALD_DIR=$T/d timeout 60 sh -c "$PID_EXEC" "$T/pid" luajit -l jitherald errors.lua \
        >"$T/out" 2>"$T/err" || fail "JITHERALD=$ch: exit $?: $(cat "$T/out" "$T/err")"
    rm -f "/tmp/perf-$(cat "$T/pid").map"
    diff -u "$T/plain" "$T/out" || fail "JITHERALD=$ch: the output differs"
done
echo "ok: same output, healthy VM, with the unwind channel"
