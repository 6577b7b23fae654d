#!/usr/bin/env bash
# `jitherald attach` (issue 27): the demo JIT started in standby announces nothing, then
# `jitherald attach PID -c gdb,elfmap` switches channels on in the running process and
# every function compiled before is there: gdb -p names them with file:line and walks the
# JIT frames to main, the code pages are mapped from elfmap's image; `--off elfmap` gives
# the pages back to anonymous memory with the same bytes; another user is refused, a
# malformed request is answered and changes nothing, and the process runs to its normal
# end with its normal output.
. "$(dirname "$0")/lib.sh"
require_tool gdb gdb
require_tool python3 python3

rm -f "$T/pause"
JITHERALD=standby JITHERALD_DIR=$T/d "$MINIJIT" --pause-file "$T/pause" "$MINI/calls.mini" \
    > "$T/vm" 2>&1 &
vm=$!
kill_at_exit $vm
wait_for_file "$T/pause" || { cat "$T/vm"; fail "minijit never paused"; }
pid=$(cat "$T/pause")

"$CLI" attach "$pid" > "$T/st0" || { cat "$T/st0"; fail "status: exit $?"; }
grep -q "^context engine=minijit live=none retained=[1-9]" "$T/st0" ||
    fail "standby: $(cat "$T/st0")"
! grep -q '\.elf' "/proc/$pid/maps" || fail "standby mapped an image"

# the code's bytes as the process sees them, by /proc/PID/mem
code_bytes() {
    python3 - "$pid" <<'PY'
import sys, re
pid = sys.argv[1]
out = []
for line in open(f"/proc/{pid}/maps"):
    m = re.match(r"([0-9a-f]+)-([0-9a-f]+) r-xp .*?(\S*)$", line.strip())
    if m and ("jit-" in m.group(3) or m.group(3) == ""):
        lo, hi = int(m.group(1), 16), int(m.group(2), 16)
        with open(f"/proc/{pid}/mem", "rb") as f:
            f.seek(lo)
            out.append(f"{lo:x} {f.read(hi - lo).hex()}")
print("\n".join(sorted(out)))
PY
}
code_bytes > "$T/bytes0"

"$CLI" attach "$pid" -c gdb,elfmap > "$T/st1" || { cat "$T/st1"; fail "attach -c gdb,elfmap"; }
grep -q "live=gdb,elfmap" "$T/st1" && grep -q '^ok$' "$T/st1" || fail "on: $(cat "$T/st1")"
grep -q "$T/d/jit-$pid-[0-9]*\.elf" "/proc/$pid/maps" || fail "elfmap: no image mapped"

timeout 120 gdb -q -nx -batch -p "$pid" -ex 'set pagination off' -ex 'info line c' \
    -ex 'break mj__builtin_callback' -ex "shell rm -f $T/pause.hold" -ex 'detach' \
    > "$T/gdb1" 2>&1 || true
cat "$T/gdb1"
grep -Eq '^Line 5 of ".*calls\.mini" starts at address 0x[0-9a-f]+ <c>' "$T/gdb1" ||
    fail "gdb -p does not know code compiled before the attach"

"$CLI" attach "$pid" --off elfmap > "$T/st2" || fail "--off elfmap: $(cat "$T/st2")"
grep -q "live=gdb " "$T/st2" || fail "off: $(cat "$T/st2")"
! grep -q '\.elf' "/proc/$pid/maps" || fail "--off elfmap left an image mapped"
code_bytes > "$T/bytes2"
cmp -s "$T/bytes0" "$T/bytes2" || fail "the code's bytes or places changed after --off"

# nobody else may switch channels (the directory is 0700; the socket checks too)
if id nobody >/dev/null 2>&1 && command -v runuser >/dev/null; then
    rc=0
    runuser -u nobody -- "$CLI" attach "$pid" -c perfmap > "$T/nobody" 2>&1 || rc=$?
    [ "$rc" != 0 ] || fail "another user switched channels: $(cat "$T/nobody")"
    "$CLI" attach "$pid" | grep -q "live=gdb " || fail "another user's attempt changed something"
fi
# a malformed request: answered, ignored, and the process still serves
python3 - "$T/d/attach-$pid.sock" > "$T/bad" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(b"\x00\xff frob gdb\n")
print(s.recv(4096).decode(errors="replace"))
PY
grep -q "^error not a request" "$T/bad" || fail "malformed: $(cat "$T/bad")"
"$CLI" attach "$pid" | grep -q "live=gdb " || fail "the socket stopped serving"

# gdb through JIT frames compiled before the attach, to main
timeout 120 gdb -q -nx -batch -p "$pid" -ex 'set pagination off' \
    -ex 'break mj__builtin_callback' -ex "shell rm -f $T/pause" -ex continue -ex bt \
    -ex detach > "$T/gdb2" 2>&1 || true
rm -f "$T/pause"
cat "$T/gdb2"
grep -Eq '^#1  0x[0-9a-f]+ in c \(\) at .*calls\.mini:7$' "$T/gdb2" || fail "bt: no c() at :7"
grep -Eq '^#2  0x[0-9a-f]+ in b \(\) at .*calls\.mini:12$' "$T/gdb2" || fail "bt: no b() at :12"
grep -Eq '^#3  0x[0-9a-f]+ in a \(\) at .*calls\.mini:17$' "$T/gdb2" || fail "bt: no a() at :17"
grep -Eq '^#4  0x[0-9a-f]+ in main \(\) at .*calls\.mini:22$' "$T/gdb2" || fail "bt: no main at :22"
wait_gone $vm || fail "minijit still running"
wait $vm || { cat "$T/vm"; fail "minijit exited $?"; }
grep -qx 225 "$T/vm" || fail "the program's output changed: $(cat "$T/vm")"
[ ! -e "$T/d/attach-$pid.sock" ] || fail "the socket outlived the process"

# a process killed before it could remove its socket: `jitherald clean` removes it
rm -f "$T/pause"
JITHERALD=standby JITHERALD_DIR=$T/d "$MINIJIT" --pause-file "$T/pause" "$MINI/calls.mini" \
    > /dev/null 2>&1 &
vm=$!
kill_at_exit $vm
wait_for_file "$T/pause" || fail "minijit never paused (2)"
pid=$(cat "$T/pause")
[ -S "$T/d/attach-$pid.sock" ] || fail "no socket for the second process"
kill -9 $vm; wait $vm 2>/dev/null || true
"$CLI" clean "$T/d" > "$T/clean" || fail "clean: $(cat "$T/clean")"
[ ! -e "$T/d/attach-$pid.sock" ] || fail "clean left a dead process's socket: $(cat "$T/clean")"
echo PASS
