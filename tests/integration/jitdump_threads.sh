#!/usr/bin/env bash
# jitdump_threads.sh — 8 threads compile and announce 201 functions each at the same time
# (minijit --threads 8) under `perf record -k 1`. Every function's records must arrive as
# one unit: `jitherald check` accepts the file (a torn or interleaved unit fails it: a
# DEBUG_INFO followed by someone else's LOAD, a reused index, a truncated record), every
# LOAD is there once, and perf inject turns each into its own jitted-*.so.
. "$(dirname "$0")/lib.sh"
require_tool perf linux-perf
private_perf_cache
cd "$T"
many_mini many.mini
export JITHERALD=jitdump JITHERALD_DIR=$T/jd JITHERALD_DEBUG=1

perf record -q -k 1 -o perf.data "$MINIJIT" --threads 8 --print-result many.mini >run.out 2>run.err ||
    { cat run.out run.err; fail "perf record minijit --threads 8"; }
[ "$(grep -c 'main returned 20100$' run.out)" = 8 ] || { cat run.out; fail "wrong results"; }
grep -i jitdump run.err && fail "the channel reported a problem"
dump=$(ls jd/jit-*.dump)
"$CLI" check "$dump" >check.out || { cat check.out; fail "jitherald check refuses the 8-thread file"; }
cat check.out
grep -q ' 1608 LOAD, 1608 DEBUG_INFO, 1608 UNWINDING_INFO, 0 MOVE, 1 CLOSE' check.out ||
    fail "expected 1608 functions, each with lines and unwind data"
# records from several threads really are interleaved in the file (else the test is moot)
tids=$("$CLI" inspect "$dump" | awk '/ LOAD / { for (i = 1; i < NF; i++) if ($i == "tid") print $(i + 1) }' | sort -u | wc -l)
[ "$tids" -ge 8 ] || fail "LOADs come from $tids threads only"

start=$(date +%s.%N)
perf inject --jit -i perf.data -o perf.jit.data 2>inject.err || { cat inject.err; fail "perf inject"; }
end=$(date +%s.%N)
n=$(ls jd | grep -c '^jitted-.*\.so$')
[ "$n" = 1608 ] || fail "perf inject wrote $n jitted-*.so, want 1608"
perf report -i perf.jit.data --stdio --sort dso -g none >/dev/null 2>&1 || fail "perf report on the injected data"
echo "PASS: 8 threads, 1608 functions from $tids threads, check ok, perf inject wrote $n ELF files in $(awk "BEGIN { printf \"%.2f\", $end - $start }") s"
