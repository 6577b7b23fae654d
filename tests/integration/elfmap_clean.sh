#!/usr/bin/env bash
# `jitherald clean`: removes the elfmap images, jitdump files, audit logs, perf inject's
# jitted-PID-N.so and perf maps of processes that are gone (--age SECONDS keeps younger
# ones), keeps those of running processes and those a live process still maps (a fork
# child running in its exited parent's image: issue 22, defect 12), never touches other
# files, symlinks or other users' files.
. "$(dirname "$0")/lib.sh"
chmod 700 "$T"
true & dead=$!; wait $dead
mkdir -m 700 "$T/d"
cd "$T/d"
touch -d '2 days ago' "jit-$dead-1.elf" "jit-$dead.dump" other.txt "jit-$dead-x.elf"
touch "jit-$dead-3.elf"                                   # gone, but written just now
touch -d '2 days ago' "jit-$$-1.elf"                      # our pid, before we started
touch "jit-$$-2.elf"                                      # ours, running
touch -d '2 days ago' "minijit-$dead.jhlog" notes.jhlog   # a log of a gone process; not a log name
touch "my-vm-$$-3.jhlog"                                  # ours (the 2nd context's log), running
ln -s /etc/hostname "jit-$dead-4.elf"
# perf inject's files beside a dump, and perf maps
touch -d '2 days ago' "jitted-$dead-1.so" "jitted-$dead-22.so" "perf-$dead.map"
touch "jitted-$$-1.so" "perf-$$.map" "jitted-$dead-x.so" "perf-$dead.map.bak"
# older generations of images, in directories of their own; one still needed
mkdir -m 700 "jit-$dead-g2" "jit-$$-g2"
touch -d '2 days ago' "jit-$dead-g2/jit-$dead-1.elf" "jit-$dead-1.elf.valgrind"
touch "jit-$$-g2/jit-$$-5.elf"
"$CLI" clean --age 86400 "$T/d" | tee out
[ ! -e "jit-$dead-1.elf" ] && [ ! -e "jit-$dead.dump" ] && [ ! -e "jit-$dead-1.elf.valgrind" ]
[ ! -e "jit-$dead-g2" ] || fail "generation directory of a finished process kept"
[ -e "jit-$$-g2/jit-$$-5.elf" ] || fail "generation of a running process removed"
[ -e "jit-$dead-3.elf" ] || fail "--age 86400 removed a file written just now"
[ -e "jit-$$-2.elf" ] && [ -e other.txt ] && [ -e "jit-$dead-x.elf" ]
[ -L "jit-$dead-4.elf" ]
[ ! -e "minijit-$dead.jhlog" ] || fail "audit log of a finished process kept"
[ -e notes.jhlog ] && [ -e "my-vm-$$-3.jhlog" ]
[ ! -e "jitted-$dead-1.so" ] && [ ! -e "jitted-$dead-22.so" ] || fail "perf inject's jitted-PID-N.so kept"
[ ! -e "perf-$dead.map" ] || fail "perf map of a finished process kept"
[ -e "jitted-$$-1.so" ] && [ -e "perf-$$.map" ] || fail "files of a running process removed"
[ -e "jitted-$dead-x.so" ] && [ -e "perf-$dead.map.bak" ] || fail "a file of another name removed"
# a file older than its pid's process belongs to an earlier process with that pid
[ ! -e "jit-$$-1.elf" ] || fail "pid re-use not noticed"
grep -q 'removed 9 files' out || fail "$(cat out)"
grep -q ', 1 younger than 86400s' out || fail "$(cat out)"
# without --age, what is gone goes whatever its age (--all says the same)
"$CLI" clean --dry-run "$T/d" | grep -q "would remove $T/d/jit-$dead-3.elf" || fail "dry run"
[ -e "jit-$dead-3.elf" ]
"$CLI" clean "$T/d"
[ ! -e "jit-$dead-3.elf" ] && [ -e "jit-$$-2.elf" ]
[ -e "my-vm-$$-3.jhlog" ] || fail "a running process's log (ENGINE-PID-N.jhlog) removed"
"$CLI" clean --all "$T/d" | grep -q '^removed 0 files' || fail "--all"
# a DIR named that does not exist is an error; the default one missing is not
rc=0; "$CLI" clean "$T/nonexistent" 2>err || rc=$?
[ $rc = 2 ] && grep -q "jitherald clean: $T/nonexistent: No such file or directory" err ||
    fail "clean of a missing DIR: exit $rc, $(cat err)"
JITHERALD_DIR=$T/nonexistent "$CLI" clean --dry-run | grep -q 'nothing to clean' || fail "missing default dir"

# Without DIR, /tmp's perf maps (and the jitdumps and jitted-PID-N.so other VMs leave
# there) are cleaned too, our own only. Listed with --dry-run: removing for real would take
# other runs' files from the shared /tmp.
while :; do    # a gone pid whose names in /tmp are free (stale maps of others abound)
    true & tdead=$!; wait $tdead
    [ -e "/tmp/perf-$tdead.map" ] || [ -e "/tmp/jitted-$tdead-7.so" ] || break
done
tmpmap=/tmp/perf-$tdead.map
at_exit "rm -f $tmpmap /tmp/jitted-$tdead-7.so"
touch "$tmpmap" "/tmp/jitted-$tdead-7.so"
JITHERALD_DIR=$T/d "$CLI" clean --dry-run > out
grep -qx "would remove $tmpmap" out && grep -qx "would remove /tmp/jitted-$tdead-7.so" out ||
    fail "clean does not list /tmp's files of a gone process: $(cat out)"
if [ "$(id -u)" = 0 ]; then
    chown nobody "$tmpmap"
    JITHERALD_DIR=$T/d "$CLI" clean --dry-run > out
    ! grep -q "$tmpmap" out || fail "another user's perf map listed"
fi

# Real files: a paused minijit keeps its images; once it is gone they go.
JITHERALD=elfmap,jitdump JITHERALD_DIR=$T/real "$MINIJIT" --pause-file "$T/pause" \
    "$MINI/fib.mini" 10 > /dev/null &
vm=$!
kill_at_exit $vm
wait_for_file "$T/pause"
ls "$T"/real/jit-$vm-*.elf > /dev/null
"$CLI" clean "$T/real"
ls "$T"/real/jit-$vm-*.elf "$T/real/jit-$vm.dump" > /dev/null
rm "$T/pause"; wait $vm
"$CLI" clean "$T/real"
! ls "$T"/real/jit-$vm* 2>/dev/null || fail "files of a finished process kept"

# Issue 22, defect 12: the parent that wrote jit-PARENT-1.elf has exited, its fork child
# still runs the code from it. clean keeps the image while the child maps it.
FORK=$(program clean_fork)
JITHERALD=elfmap JITHERALD_DIR=$T/fork "$FORK" "$T/ready" "$T/stop" > "$T/fork.out" &
parent=$!
wait $parent || fail "clean_fork's parent failed"
wait_for_file "$T/ready"
child=$(cat "$T/ready")
kill_at_exit "$child"
img=$T/fork/jit-$parent-1.elf
grep -q " $img\$" "/proc/$child/maps" || fail "the child does not map $img: $(grep jit- "/proc/$child/maps")"
kill -0 "$parent" 2>/dev/null && fail "the parent $parent still runs"
"$CLI" clean --all "$T/fork" | tee out
[ -e "$img" ] || fail "clean removed $img, which process $child still maps"
grep -qx "kept $T/fork/jit-$parent-1.elf: process $child maps it" out || fail "no word of the kept image"
"$CLI" clean --dry-run "$T/fork" | grep -q "^would remove /" && fail "dry run lists the mapped image"
touch "$T/stop"
while kill -0 "$child" 2>/dev/null; do sleep 0.05; done
grep -qx 'child fib(20)=6765' "$T/fork.out" || fail "the child's code broke: $(cat "$T/fork.out")"
"$CLI" clean "$T/fork" | grep -q '^removed 1 files' || fail "the image stays after the child"
[ ! -e "$img" ] || fail "$img kept after its child exited"

# A process of ours whose mappings cannot be read (non-dumpable, and no CAP_SYS_PTRACE)
# may map the image: it is kept, and clean says which process it could not read.
runas=()
if [ "$(id -u)" = 0 ]; then
    runas=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
    mkdir -m 700 "$T/nd" && chown nobody "$T/nd"
    chmod 711 "$T"
else
    mkdir -m 700 "$T/nd"
fi
rm -f "$T/ready" "$T/stop"
"${runas[@]}" env JITHERALD=elfmap JITHERALD_DIR=$T/nd/img CLEAN_FORK_UNDUMPABLE=1 \
    "$FORK" "$T/nd/ready" "$T/nd/stop" > /dev/null
wait_for_file "$T/nd/ready"
child=$(cat "$T/nd/ready")
kill_at_exit "$child"
at_exit "touch $T/nd/stop"
if "${runas[@]}" cat "/proc/$child/maps" >/dev/null 2>&1; then
    skip "this user can read a non-dumpable process's mappings (CAP_SYS_PTRACE): the unreadable case is NOT checked (the rest passed)"
fi
"${runas[@]}" "$CLI" clean "$T/nd/img" > out 2> err
ls "$T"/nd/img/jit-*-1.elf > /dev/null || fail "an image that an unreadable process may map was removed"
grep -q "process $child may map it" out && grep -q "/proc/$child/maps cannot be read" err ||
    fail "clean did not say why it kept the image: $(cat out err)"
"${runas[@]}" touch "$T/nd/stop"
while kill -0 "$child" 2>/dev/null; do sleep 0.05; done
"${runas[@]}" "$CLI" clean "$T/nd/img" | grep -q '^removed 1 files' || fail "kept after the child exited"
echo PASS
