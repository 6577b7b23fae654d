#!/usr/bin/env bash
# `jitherald clean`: removes elfmap images and jitdump files of processes that are gone
# (older than --age, default a day; --all: any age), keeps those of running processes,
# never touches other files or symlinks.
set -eu
B=$JH_BUILD; R=$JH_ROOT
T=$(mktemp -d); trap 'kill $vm 2>/dev/null || true; rm -rf "$T"' EXIT
chmod 700 "$T"
true & dead=$!; wait $dead
mkdir -m 700 "$T/d"
cd "$T/d"
touch -d '2 days ago' "jit-$dead-1.elf" "jit-$dead.dump" other.txt "jit-$dead-x.elf"
touch "jit-$dead-3.elf"                                   # gone, but written just now
touch -d '2 days ago' "jit-$$-1.elf"                      # our pid, before we started
touch "jit-$$-2.elf"                                      # ours, running
ln -s /etc/hostname "jit-$dead-4.elf"
"$B/jitherald" clean "$T/d" | tee out
[ ! -e "jit-$dead-1.elf" ] && [ ! -e "jit-$dead.dump" ]
[ -e "jit-$dead-3.elf" ] && [ -e "jit-$$-2.elf" ] && [ -e other.txt ] && [ -e "jit-$dead-x.elf" ]
[ -L "jit-$dead-4.elf" ]
# a file older than its pid's process belongs to an earlier process with that pid
[ ! -e "jit-$$-1.elf" ] || { echo "FAIL: pid re-use not noticed"; exit 1; }
grep -q 'removed 3 files' out
"$B/jitherald" clean --dry-run --all "$T/d" | grep -q "would remove $T/d/jit-$dead-3.elf"
[ -e "jit-$dead-3.elf" ]
"$B/jitherald" clean --all "$T/d"
[ ! -e "jit-$dead-3.elf" ] && [ -e "jit-$$-2.elf" ]

# Real files: a paused minijit keeps its images; once it is gone they go.
JITHERALD=elfmap,jitdump JITHERALD_DIR=$T/real "$B/examples/minijit" --pause-file "$T/pause" \
    "$R/examples/minijit/fib.mini" 10 > /dev/null &
vm=$!
for _ in $(seq 200); do [ -s "$T/pause" ] && break; sleep 0.05; done
ls "$T/real"
ls "$T"/real/jit-$vm-*.elf > /dev/null
"$B/jitherald" clean --all "$T/real"
ls "$T"/real/jit-$vm-*.elf "$T/real/jit-$vm.dump" > /dev/null
rm "$T/pause"; wait $vm
"$B/jitherald" clean --all "$T/real"
if ls "$T"/real/jit-$vm* 2>/dev/null; then echo "FAIL: files of a finished process kept"; exit 1; fi
echo PASS
