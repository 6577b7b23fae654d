#!/usr/bin/env bash
# JITHERALD=elfmap perf record -g (no -k 1, no perf inject, no perf map): perf report names
# the JIT functions with file:line and perf annotate disassembles them, from the image
# files the code pages are mapped from.
set -eu
B=$JH_BUILD; R=$JH_ROOT
command -v perf >/dev/null || { echo "SKIP perf is not installed"; exit 77; }
T=$(mktemp -d); vm=; trap 'kill $vm 2>/dev/null || true; rm -rf "$T"' EXIT
cd "$T"
cp "$R/examples/minijit/fib.mini" .
JITHERALD=elfmap JITHERALD_DIR=$T/d perf record -q -g -o perf.data \
    "$B/examples/minijit" fib.mini 31 > out 2> rec.err || { cat rec.err; echo "FAIL: perf record"; exit 1; }
[ "$(cat out)" = 1346269 ]
pid=$(perf script -i perf.data -F pid 2>/dev/null | head -1 | tr -d ' ')
[ ! -e "/tmp/perf-$pid.map" ] || { echo "FAIL: a perf map was written"; exit 1; }
perf report -i perf.data --stdio --no-children --sort dso,sym,srcline 2> /dev/null > rep
grep -v '^#' rep | grep -v '^$' | head -12
grep -E '[0-9.]+%.*jit-[0-9]+-[0-9]+\.elf +\[\.\] fib +fib\.mini:[0-9]+' rep
perf annotate -i perf.data --stdio fib 2> /dev/null > ann
head -30 ann
grep -E 'Disassembly of jit-[0-9]+-[0-9]+\.elf' ann || grep -E 'of jit-[0-9]+-[0-9]+\.elf' ann
grep -E ':\s+[0-9a-f]+:\s+push\s+%rbp' ann
grep -E 'if n < 2' ann

# perf attached after the code was compiled and swapped: it learns the mappings from
# /proc/PID/maps, image paths included.
JITHERALD=elfmap JITHERALD_DIR=$T/d2 "$B/examples/minijit" --pause-file "$T/pause" fib.mini 31 > out2 &
vm=$!
for _ in $(seq 200); do [ -s "$T/pause" ] && break; sleep 0.05; done
perf record -q -g -p "$vm" -o perf2.data 2> rec2.err &
rec=$!
sleep 1                       # perf is attached once it has read the maps
rm "$T/pause"
wait "$vm"
wait "$rec" || true           # perf record -p ends with its target
perf report -i perf2.data --stdio --no-children --sort dso,sym 2> /dev/null > rep2 || cat rec2.err
grep -E '[0-9.]+%.*jit-[0-9]+-[0-9]+\.elf +\[\.\] fib' rep2
echo PASS
