#!/usr/bin/env bash
# JITHERALD=elfmap perf record -g (no -k 1, no perf inject, no perf map): perf report names
# the JIT functions with file:line and perf annotate disassembles them, from the image
# files the code pages are mapped from.
. "$(dirname "$0")/lib.sh"
require_tool perf linux-perf
cd "$T"
cp "$MINI/fib.mini" .
JITHERALD=elfmap JITHERALD_DIR=$T/d perf record -q -g -o perf.data \
    "$MINIJIT" fib.mini 31 > out 2> rec.err || { cat rec.err; fail "perf record"; }
[ "$(cat out)" = 1346269 ]
pid=$(perf script -i perf.data -F pid 2>/dev/null | head -1 | tr -d ' ')
! wrote_perf_map "$pid" || fail "a perf map was written"
perf report -i perf.data --stdio --no-children --sort dso,sym,srcline 2> /dev/null > rep
grep -v '^#' rep | grep -v '^$' | head -12
grep -E '[0-9.]+%.*jit-[0-9]+-[0-9]+\.elf +\[\.\] fib +fib\.mini:[0-9]+' rep
perf annotate -i perf.data --stdio fib 2> /dev/null > ann
head -30 ann
grep -E 'Disassembly of jit-[0-9]+-[0-9]+\.elf' ann || grep -E 'of jit-[0-9]+-[0-9]+\.elf' ann
grep -E ':\s+[0-9a-f]+:\s+push\s+%rbp' ann
grep -E 'if n < 2' ann

# perf attached after the code was compiled and swapped: it learns the mappings from
# /proc/PID/maps, image paths included. perf starts with its events off (-D -1) and
# acknowledges turning them on only once it is attached and has read the maps.
JITHERALD=elfmap JITHERALD_DIR=$T/d2 "$MINIJIT" --pause-file "$T/pause" fib.mini 31 > out2 &
vm=$!
kill_at_exit $vm
wait_for_file "$T/pause"
mkfifo ctl ack
perf record -q -g -p "$vm" -D -1 --control fifo:ctl,ack -o perf2.data 2> rec2.err &
rec=$!
kill_at_exit $rec
timeout 30 sh -c 'echo enable > ctl && read -r a < ack && [ "$a" = ack ]' ||
    { cat rec2.err; fail "perf record -p did not start"; }
rm "$T/pause"
wait "$vm"
wait "$rec" || true           # perf record -p ends with its target
perf report -i perf2.data --stdio --no-children --sort dso,sym 2> /dev/null > rep2 || cat rec2.err
grep -E '[0-9.]+%.*jit-[0-9]+-[0-9]+\.elf +\[\.\] fib' rep2
echo PASS
