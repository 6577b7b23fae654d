#!/usr/bin/env bash
# run_rakudo_perf.sh — `perf record -- jitherald run -c elfmap -- rakudo ...`, then a plain
# `perf report`: no -k 1, no perf inject, and the perf map moved out of perf's sight —
# MoarVM's JIT frames are named from the images their pages were swapped to. (Which
# functions MoarVM compiles before it exits depends on its specializer thread: any of its
# frames will do.)
. "$(dirname "$0")/lib.sh"
require_tool rakudo rakudo
require_tool perf linux-perf
private_perf_cache
cd "$T"
MVM_JIT_PERF_MAP=1 JITHERALD_DIR=$T/d perf record -q -o perf.data -- \
    "$CLI" run -c elfmap -- rakudo -e 'sub f($n) { $n < 2 ?? $n !! f($n - 1) + f($n - 2) }; say f(22)' \
    > out 2> rec.err || { cat rec.err; fail "perf record"; }
grep -qx 17711 out || fail "rakudo's output"
for m in d/jit-*.elf; do
    pid=${m#d/jit-}; pid=${pid%%-*}
done
[ -n "${pid:-}" ] && [ -e "d/jit-$pid-1.elf" ] || fail "no image was written"
[ -s "/tmp/perf-$pid.map" ] || fail "rakudo wrote no perf map"
mv "/tmp/perf-$pid.map" .       # perf must not find it
perf report -i perf.data --stdio --no-children --sort dso,sym 2> /dev/null > rep
grep -v '^#' rep | grep -v '^$' | head -8
grep -E '[0-9.]+%.*jit-[0-9]+-[0-9]+\.elf +\[\.\] [^ ]*\([^)]*:[0-9]+\)' rep | head -3 | grep -q . ||
    fail "perf report names no MoarVM JIT frame"
echo PASS
