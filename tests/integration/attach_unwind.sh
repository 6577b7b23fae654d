#!/usr/bin/env bash
# `jitherald attach PID -c unwind` (issue 27): a JIT in standby compiled five functions and
# waits; once the unwinder is switched on from outside, a C++ exception thrown below those
# frames is caught above them and backtrace() reaches main (tests/programs/attach_unwind.cc).
# The control run, not attached, loses the exception (the C++ runtime terminates): the
# checks cannot pass by accident.
. "$(dirname "$0")/lib.sh"
P=$(program attach_unwind)

run_it() { # attach(1|0) -> exit status of the program, its output in $T/out
    rm -f "$T/pause"
    JITHERALD=standby JITHERALD_DIR=$T/d "$P" "$T/pause" > "$T/out" 2>&1 &
    local vm=$!
    kill_at_exit $vm
    wait_for_file "$T/pause" || { cat "$T/out"; fail "never paused"; }
    if [ "$1" = 1 ]; then
        "$CLI" attach "$vm" -c unwind > "$T/att" || { cat "$T/att"; fail "attach -c unwind"; }
        grep -q "live=unwind " "$T/att" || fail "$(cat "$T/att")"
    fi
    rm -f "$T/pause"
    local rc=0
    wait $vm || rc=$?
    return $rc
}

# control: libgcc finds no frame for the JIT code, so the exception never reaches its
# handler and the C++ runtime terminates the process
rc=0; run_it 0 2>/dev/null || rc=$?
cat "$T/out"
[ "$rc" = 134 ] && grep -q "terminate called after throwing" "$T/out" ||
    fail "control (no attach): exit $rc, $(cat "$T/out")"
rc=0; run_it 1 || rc=$?
cat "$T/out"
[ "$rc" = 0 ] || fail "after attach -c unwind: exit $rc"
grep -q "exception caught above the JIT frames; backtrace() reaches main" "$T/out" ||
    fail "after attach: $(cat "$T/out")"
echo PASS
