#!/usr/bin/env bash
# `jitherald attach PID -c elfmap` in a process that ran in standby (issue 27): perf
# attached afterwards (`perf record -p`, no -k 1, no inject, no perf map) names the JIT
# function compiled before the attach, with its source line, from elfmap's image; and with
# perfmap switched on the same way, perf names it from the perf map written by the rundown.
. "$(dirname "$0")/lib.sh"
require_tool perf linux-perf
cd "$T"
cp "$MINI/fib.mini" .

attach_and_profile() { # CHANNEL
    local ch=$1
    rm -f "$T/pause"
    JITHERALD=standby JITHERALD_DIR=$T/d-$ch "$MINIJIT" --pause-file "$T/pause" fib.mini 31 \
        > "out-$ch" 2> "vm-$ch.err" &
    local vm=$!
    kill_at_exit $vm
    wait_for_file "$T/pause" || { cat "vm-$ch.err"; fail "$ch: minijit never paused"; }
    ! wrote_perf_map "$vm" || fail "$ch: standby wrote a perf map"
    "$CLI" attach "$vm" -c "$ch" > "att-$ch" || { cat "att-$ch"; fail "$ch: attach"; }
    grep -q "live=$ch " "att-$ch" || fail "$ch: $(cat "att-$ch")"
    rm -f ctl ack; mkfifo ctl ack
    perf record -q -g -p "$vm" -D -1 --control fifo:ctl,ack -o "perf-$ch.data" 2> "rec-$ch.err" &
    local rec=$!
    kill_at_exit $rec
    timeout 30 sh -c 'echo enable > ctl && read -r a < ack && [ "$a" = ack ]' ||
        { cat "rec-$ch.err"; fail "$ch: perf record -p did not start"; }
    rm "$T/pause"
    wait "$vm" || fail "$ch: minijit exited $?"
    wait "$rec" || true
    [ "$(cat "out-$ch")" = 1346269 ] || fail "$ch: the program's output changed"
    perf report -i "perf-$ch.data" --stdio --no-children --sort dso,sym,srcline 2> /dev/null \
        > "rep-$ch" || cat "rec-$ch.err"
    grep -v '^#' "rep-$ch" | grep -v '^$' | head -6
}

attach_and_profile elfmap
grep -Eq '[0-9.]+%.*jit-[0-9]+-[0-9]+\.elf +\[\.\] fib +fib\.mini:[0-9]+' rep-elfmap ||
    fail "perf does not name fib from the image elfmap mapped at attach"
attach_and_profile perfmap
grep -Eq '[0-9.]+%.* \[\.\] fib( |$)' rep-perfmap ||
    fail "perf does not name fib from the perf map written at attach"
echo PASS
