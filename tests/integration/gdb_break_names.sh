#!/usr/bin/env bash
# Breaking on JIT code the way a LuaJIT user would (tests/programs/gdb_names.c): a function
# displayed as "TRACE_1 x.lua:10" whose body is a loop. `break TRACE_1_x_lua_10` (its
# symbol, derived from the display name) set before the code exists becomes pending, then
# hits; the backtrace shows the display name and reaches main; and with prologue_end the
# breakpoint is where the frame is set up, before the loop: it hits once, not once per
# iteration. The control without prologue_end shows what gdb did before: five hits.
. "$(dirname "$0")/lib.sh"
require_tool gdb gdb
P=$(program gdb_names)

run_gdb() { # args... (of the program)
    JITHERALD=gdb timeout 120 gdb -q -nx -batch -ex 'set breakpoint pending on' \
        -ex 'break TRACE_1_x_lua_10' -ex run -ex bt \
        -ex continue -ex continue -ex continue -ex continue -ex continue \
        --args "$P" "$@" 2>&1 || true
}

run_gdb >"$T/out"
grep -q 'Breakpoint 1 (TRACE_1_x_lua_10) pending' "$T/out" || { cat "$T/out"; fail "not pending"; }
hits=$(grep -c '^Breakpoint 1, ' "$T/out" || true)
[ "$hits" = 1 ] || { cat "$T/out"; fail "breakpoint hit $hits times, want 1 (prologue_end)"; }
grep -q '^Breakpoint 1, TRACE_1 x.lua:10 () at x.lua:10$' "$T/out" || { cat "$T/out"; fail "hit"; }
grep -q '^#0  TRACE_1 x.lua:10 () at x.lua:10$' "$T/out" || { cat "$T/out"; fail "frame #0"; }
grep -Eq '^#1  0x[0-9a-f]+ in call_it ' "$T/out" || { cat "$T/out"; fail "frame #1"; }
grep -Eq '^#2  0x[0-9a-f]+ in main ' "$T/out" || { cat "$T/out"; fail "frame #2"; }
grep -q '^calls=5$' "$T/out" || { cat "$T/out"; fail "the program did not finish"; }

run_gdb no-prologue-end >"$T/control"
hits=$(grep -c '^Breakpoint 1, TRACE_1 x.lua:10 () at x.lua:11$' "$T/control" || true)
[ "$hits" = 5 ] || { cat "$T/control"; fail "control: $hits hits on the loop head, want 5"; }
echo "ok: pending break on the symbol hits once at the prologue end; control 5 times"
