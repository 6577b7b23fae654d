#!/usr/bin/env bash
# A log cut by kill -9 is still readable: the demo JIT compiles and announces its
# functions, logs its structs, waits (--pause-file) and is killed -9 mid-run. The log has
# every record up to the kill, says it was not closed, and shows the functions as live.
. "$(dirname "$0")/lib.sh"
JITHERALD=auditlog JITHERALD_DIR=$T "$MINIJIT" --log-structs --threads 2 \
    --pause-file "$T/pause" "$MINI/calls.mini" > /dev/null &
vm=$!
kill_at_exit $vm
wait_for_file "$T/pause"
kill -9 $vm
wait $vm 2>/dev/null || true
log=$(ls "$T"/minijit-*.jhlog)
ls -l "$log"
J="$CLI log $log"
$J info | tee "$T/info"
grep -q "NOT closed" "$T/info"
# two threads each compiled the four functions of calls.mini
grep -q "8 functions (8 live at the end), 8 memory snapshots, 8 events" "$T/info"
$J code | tee "$T/code"
for f in a b c main; do
    [ "$(grep -Ec "add +[0-9]+  $f " "$T/code")" -eq 2 ] || fail "$f not added twice"
done
! grep -Eq '^ +[0-9]+ +[0-9.]+  remove ' "$T/code" || fail "a function was removed before the kill"
grep -q "8 functions added, 0 removed, 8 live at the end" "$T/code"
# the report of a crashed process says so
$J report -o "$T/r.html"
grep -q "not closed" "$T/r.html"

# A frame cut in the middle of its write (first byte never stored) is skipped, and the
# records after it still read: zero the first byte of the third frame.
cp "$log" "$T/cut.jhlog"
off=$(python3 - "$log" <<'PY'
import sys
b = open(sys.argv[1], 'rb').read(); off = 0
for _ in range(2):
    off += 5 + int.from_bytes(b[off+1:off+5], 'big')
print(off)
PY
)
printf '\0' | dd of="$T/cut.jhlog" bs=1 seek="$off" conv=notrunc 2>/dev/null
"$CLI" log "$T/cut.jhlog" info | tee "$T/info2"
grep -q "1 record(s) were being written when the process stopped" "$T/info2"
echo PASS
