#!/usr/bin/env bash
# `jitherald clean`: removes elfmap images, jitdump files and audit logs of processes that are gone
# (older than --age, default a day; --all: any age), keeps those of running processes,
# never touches other files or symlinks.
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
# older generations of images, in directories of their own; one still needed
mkdir -m 700 "jit-$dead-g2" "jit-$$-g2"
touch -d '2 days ago' "jit-$dead-g2/jit-$dead-1.elf" "jit-$dead-1.elf.valgrind"
touch "jit-$$-g2/jit-$$-5.elf"
"$CLI" clean "$T/d" | tee out
[ ! -e "jit-$dead-1.elf" ] && [ ! -e "jit-$dead.dump" ] && [ ! -e "jit-$dead-1.elf.valgrind" ]
[ ! -e "jit-$dead-g2" ] || fail "generation directory of a finished process kept"
[ -e "jit-$$-g2/jit-$$-5.elf" ] || fail "generation of a running process removed"
[ -e "jit-$dead-3.elf" ] && [ -e "jit-$$-2.elf" ] && [ -e other.txt ] && [ -e "jit-$dead-x.elf" ]
[ -L "jit-$dead-4.elf" ]
[ ! -e "minijit-$dead.jhlog" ] || fail "audit log of a finished process kept"
[ -e notes.jhlog ] && [ -e "my-vm-$$-3.jhlog" ]
# a file older than its pid's process belongs to an earlier process with that pid
[ ! -e "jit-$$-1.elf" ] || fail "pid re-use not noticed"
grep -q 'removed 6 files' out
"$CLI" clean --dry-run --all "$T/d" | grep -q "would remove $T/d/jit-$dead-3.elf"
[ -e "jit-$dead-3.elf" ]
"$CLI" clean --all "$T/d"
[ ! -e "jit-$dead-3.elf" ] && [ -e "jit-$$-2.elf" ]
[ -e "my-vm-$$-3.jhlog" ] || fail "a running process's log (ENGINE-PID-N.jhlog) removed"
# a DIR named that does not exist is an error; the default one missing is not
rc=0; "$CLI" clean "$T/nonexistent" 2>err || rc=$?
[ $rc = 2 ] && grep -q "jitherald clean: $T/nonexistent: No such file or directory" err ||
    fail "clean of a missing DIR: exit $rc, $(cat err)"
JITHERALD_DIR=$T/nonexistent "$CLI" clean | grep -q 'nothing to clean' || fail "missing default dir"

# Real files: a paused minijit keeps its images; once it is gone they go.
JITHERALD=elfmap,jitdump JITHERALD_DIR=$T/real "$MINIJIT" --pause-file "$T/pause" \
    "$MINI/fib.mini" 10 > /dev/null &
vm=$!
kill_at_exit $vm
wait_for_file "$T/pause"
ls "$T/real"
ls "$T"/real/jit-$vm-*.elf > /dev/null
"$CLI" clean --all "$T/real"
ls "$T"/real/jit-$vm-*.elf "$T/real/jit-$vm.dump" > /dev/null
rm "$T/pause"; wait $vm
"$CLI" clean --all "$T/real"
! ls "$T"/real/jit-$vm* 2>/dev/null || fail "files of a finished process kept"
echo PASS
