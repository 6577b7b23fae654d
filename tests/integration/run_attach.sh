#!/usr/bin/env bash
# `jitherald attach` on a VM under `jitherald run -c standby` (issue 27): node writes its
# perf map, the preload hears it and retains every function in standby (no tool told);
# `attach -c gdb` then switches gdb on in the one context that keeps every function (besides
# elfmap's), and `gdb -p` names the JS functions V8 compiled before the attach; `attach --on
# auditlog` writes a log whose rundown holds them too; elfmap, whose page swaps only the preload's own announcements may
# make, is refused with the reason; the VM's output is unchanged.
. "$(dirname "$0")/lib.sh"
require_tool node nodejs
require_tool gdb gdb
cd "$T"
rm -f pause
JITHERALD_DIR=$T/d "$CLI" run -c standby -- node --perf-basic-prof \
    "$R/tests/run/node_wait.js" "$T/pause" > out 2> err &
run=$!
kill_at_exit $run
wait_for_file "$T/pause" 120 || { cat out err; fail "node never wrote its pid"; }
pid=$(cat "$T/pause")
at_exit "rm -f /tmp/perf-$pid.map"
"$CLI" attach "$pid" > st0 || { cat st0; fail "status"; }
cat st0
grep -Eq "^context engine=run live=none retained=[1-9][0-9]{2,}" st0 ||
    fail "standby under run retained nothing"
grep "live=" st0 | grep -qv "live=none" && fail "something is on in standby"
# every function kept once: one context for gdb, unwind and the audit log (elfmap, not
# asked for, has none)
[ "$(grep -c '^context ' st0)" = 1 ] || fail "not one context: $(cat st0)"
! ls d/jit-*.elf d/*.jhlog > /dev/null 2>&1 || fail "standby wrote images or a log"

# control: before the attach no tool was told, so gdb names no JS frame
timeout 120 gdb -q -nx -batch -p "$pid" -ex 'bt 4' -ex detach > gdb0.out 2>&1 || true
grep -aq ' in JS:' gdb0.out && { grep -a '^#' gdb0.out; fail "gdb named JS frames in standby"; }
"$CLI" attach "$pid" -c gdb > st1 || { cat st1; fail "attach -c gdb"; }
cat st1
grep -q "live=gdb " st1 || fail "gdb is on in no context"
# node spins in outer() -> inner() (or in V8 code they call): the JS frames by name
ok=0
for try in 1 2 3 4 5; do
    timeout 120 gdb -q -nx -batch -p "$pid" -ex 'bt 4' -ex detach > gdb.out 2>&1 || true
    grep -a '^#' gdb.out
    grep -aEq '^#[0-9]+ +0x[0-9a-f]+ in JS:.inner .*node_wait\.js:4:[0-9]+ \(\)' gdb.out &&
        grep -aEq '^#[0-9]+ +0x[0-9a-f]+ in JS:.outer .*node_wait\.js:5:[0-9]+ \(\)' gdb.out &&
        { ok=1; break; }
done
[ $ok = 1 ] || fail "gdb -p does not name inner() and outer(), compiled before the attach"

"$CLI" attach "$pid" --on auditlog > st2 || { cat st2; fail "attach --on auditlog"; }
grep -Eq "live=([a-z]+,)*auditlog[ ,]" st2 || fail "auditlog is on in no context: $(cat st2)"
log=$(ls d/*.jhlog | head -1)
[ -n "$log" ] || fail "no audit log after --on auditlog"

rc=0
"$CLI" attach "$pid" --on elfmap > st3 || rc=$?
[ "$rc" = 1 ] && grep -q "^error elfmap: not switched on" st3 || fail "elfmap: rc $rc, $(cat st3)"
! ls d/jit-*.elf > /dev/null 2>&1 || fail "elfmap images appeared"

rm -f "$T/pause"
wait $run || { cat out err; fail "the run exited $?"; }
grep -qx done out || fail "node's output changed: $(cat out)"
"$CLI" log "$log" code outer > code.out 2>&1 || true
grep -q "outer" code.out || { cat code.out; fail "the audit log's rundown has no outer()"; }
echo PASS
