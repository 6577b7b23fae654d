#!/usr/bin/env bash
# producers_beam.sh — `jitherald check` and `inspect` on what Erlang/OTP 25 writes with
# erl +JPperf true, next to what perf does with the same files (docs/interop.md). The
# jitdump: check exits 0 with the warnings due, --strict exits 1, inspect lists as many
# LOADs as perf inject --jit wrote jitted-*.so files. The perf map, with 0x before its
# numbers: every line read, and perf itself names BEAM samples from it.
. "$(dirname "$0")/lib.sh"
require_tool perf linux-perf
require_tool erl erlang-base
private_perf_cache
cd "$T"

# its jitdump and its perf map go to /tmp, and so do perf's ELF files
mkdir erl && cd erl
perf record -q -k 1 -o perf.data erl +JPperf true -noshell \
    -eval 'io:format("~p~n", [lists:sum(lists:seq(1, 300000))]), halt().' >out 2>&1 ||
    { cat out; fail "perf record erl"; }
grep -qx 45000150000 out || fail "erl"
pid=$(perf report -i perf.data --sort pid 2>/dev/null | sed -n 's/.* \([0-9][0-9]*\):beam.smp.*/\1/p' | head -1)
[ -n "$pid" ] && [ -f "/tmp/jit-$pid.dump" ] || pid=$(ls -t /tmp/jit-*.dump | head -1 | sed 's/.*jit-\([0-9]*\).dump/\1/')
at_exit "rm -f /tmp/perf-$pid.map /tmp/jit-$pid.dump; find /tmp -maxdepth 1 -name 'jitted-$pid-*.so' -delete"
check_quirks "/tmp/jit-$pid.dump" line-empty-file
n=$(loads); so=$(injected /tmp "$pid")
echo "erl: inspect $n LOADs, perf inject $so"
[ "$n" -gt 1000 ] && [ "$n" = "$so" ] || fail "erl: $n LOADs, perf inject wrote $so"
cp "/tmp/perf-$pid.map" .
map_lines "perf-$pid.map"
grep -q '(0x before the numbers' check.err || grep -q '0x before the numbers' check.err || fail "no 0x warning"
# perf itself reads the 0x map: samples in BEAM code get Erlang names
perf report -i perf.data --sort sym 2>/dev/null | grep -E '\[\.\] \$[a-z_]+:[a-z_]+/[0-9]' | head -3 |
    grep -q . || fail "perf named nothing from Erlang's 0x map"
cd ..
echo PASS
