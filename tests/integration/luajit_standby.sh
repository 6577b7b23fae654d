#!/usr/bin/env bash
# LuaJIT through the adapter in standby (issue 27): `JITHERALD=standby luajit -l jitherald`
# tells no tool while it compiles its traces; `jitherald attach PID -c gdb` then announces
# every trace compiled before, so `gdb -p` breaks in trace 1 at once (not pending) and,
# stopped in getpid called by a side trace, walks through the trace (named, with its line)
# to luajit's main. The script's output is unchanged.
. "$(dirname "$0")/lib.sh"
require_tool gdb gdb
luajit_adapter
cd "$LUAJIT_SCRIPTS"
rm -f "$T/pause"
JITHERALD=standby JITHERALD_DIR=$T/d luajit -l jitherald standby.lua "$T/pause" > "$T/out" 2>&1 &
vm=$!
kill_at_exit $vm
wait_for_file "$T/pause" || { cat "$T/out"; fail "luajit never paused"; }
pid=$(cat "$T/pause")
"$CLI" attach "$pid" > "$T/st0" || { cat "$T/st0"; fail "status"; }
grep -Eq "^context engine=luajit live=none retained=[1-9]" "$T/st0" ||
    fail "standby retained no trace: $(cat "$T/st0")"
"$CLI" attach "$pid" -c gdb > "$T/st1" || { cat "$T/st1"; fail "attach -c gdb"; }
grep -q "live=gdb " "$T/st1" || fail "$(cat "$T/st1")"
timeout 120 gdb -q -nx -batch -p "$pid" -ex 'break TRACE_1' -ex 'break getpid' \
    -ex "shell rm -f $T/pause" -ex continue -ex continue -ex bt -ex detach > "$T/gdb" 2>&1 || true
rm -f "$T/pause"
cat "$T/gdb"
grep -Eq '^Breakpoint 1 at 0x[0-9a-f]+: file .*standby\.lua, line [0-9]+\.$' "$T/gdb" ||
    fail "gdb -p does not know trace 1, compiled before the attach"
awk '/getpid/ && /^Thread|^Breakpoint 2,/ { f = 1 } f' "$T/gdb" > "$T/bt"
grep -Eq '^#1  0x[0-9a-f]+ in TRACE_[0-9]+ standby\.lua:9 \(\) at .*standby\.lua:9$' "$T/gdb" ||
    fail "the trace calling getpid is not named with its line"
grep -Eq '^#[0-9]+  0x[0-9a-f]+ in main \(\)$' "$T/gdb" || fail "bt does not reach main"
wait $vm || { cat "$T/out"; fail "luajit exited $?"; }
grep -qx "total	true" "$T/out" || fail "the script's output changed: $(cat "$T/out")"
echo ok
