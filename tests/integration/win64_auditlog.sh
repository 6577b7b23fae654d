#!/usr/bin/env bash
# The audit log written by a Windows program (under Wine, into a file mapping that grows
# past its first view) reads on Linux with the same CLI: functions, events with their
# addresses resolved, a removal, a clean close; and a process that dies without jh_close
# leaves a log that still reads, saying it was not closed.
. "$(dirname "$0")/lib.sh"
wine_setup
for mode in normal crash; do
    mkdir -p "$T/$mode"
    rc=0; JITHERALD=auditlog,unwind JITHERALD_DIR="Z:${T//\//\\}\\$mode" \
        run_win "$mode" auditlog_test.exe "$mode" || rc=$?
    cat "$T/$mode.out" "$T/$mode.err"
    grep -q "^ok logged" "$T/$mode.out" || fail "$mode: nothing logged"
    log=$(ls "$T/$mode"/wjit-*.jhlog) || fail "$mode: no wjit-PID.jhlog"
    J="$CLI log $log"
    $J info | tee "$T/$mode.info"
    grep -q "4105 records\|4104 records" "$T/$mode.info"
    grep -q "3 functions (2 live at the end), 4097 memory snapshots, 2 events" "$T/$mode.info"
    grep -q "executable: .*auditlog_test.exe" "$T/$mode.info"
    $J code | tee "$T/$mode.code"
    for f in al_outer al_middle al_inner; do
        grep -Eq "add +[0-9]+  $f " "$T/$mode.code" || fail "$mode: no add of $f"
    done
    grep -Eq "remove +3  al_inner " "$T/$mode.code"
    $J events | tee "$T/$mode.events"
    grep -Eq 'compile name="al_middle" code=0x[0-9a-f]+\[al_middle\+0x0\] state=0x[0-9a-f]+\[struct vm_state, 24 B logged\] tier=-2' \
        "$T/$mode.events"
    grep -q " done$" "$T/$mode.events"
done
grep -q "closed cleanly, nothing dropped" "$T/normal.info"
[ "$(stat -c %s "$(ls "$T"/normal/wjit-*.jhlog)")" -lt 6000000 ] || fail "the closed log was not trimmed"
grep -q "NOT closed" "$T/crash.info"
echo "win64_auditlog: all passed"
