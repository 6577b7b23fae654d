#!/usr/bin/env bash
# producers_maps.sh — `jitherald check` and `inspect` on the perf maps MoarVM (rakudo,
# MVM_JIT_PERF_MAP=1) and Mono (--jitmap) write (docs/interop.md): check exits 0, also
# with --strict, and inspect reads every line.
. "$(dirname "$0")/lib.sh"
require_tool perf linux-perf
require_tool rakudo rakudo
require_tool mono mono-runtime
private_perf_cache
cd "$T"

# --- rakudo: MoarVM's perf map
mkdir moar && cd moar
MVM_JIT_PERF_MAP=1 rakudo -e 'sub f($n) { $n < 2 ?? $n !! f($n - 1) + f($n - 2) }; say f(18)' >out &
rpid=$!; wait $rpid || fail "rakudo"
grep -qx 2584 out || fail "rakudo result"
at_exit "rm -f /tmp/perf-$rpid.map"
mv "/tmp/perf-$rpid.map" .
map_lines "perf-$rpid.map"
"$CLI" check --strict "perf-$rpid.map" >/dev/null || fail "MoarVM's map fails --strict"
# which frames MoarVM compiled before exiting depends on its specializer thread's timing:
# any compiled frame is named "name(file:line)"
grep -Eq '^ +1  0x[0-9a-f]+\.\.0x[0-9a-f]+  .*\(.*:[0-9]+\)$' inspect.out || { head inspect.out; fail "inspect: no MoarVM frame"; }
cd ..

# --- mono: --jitmap (gacutil.exe ships with mono-runtime's GAC)
mkdir mono && cd mono
mono --jitmap /usr/lib/mono/4.5/gacutil.exe -l >out 2>&1 &
mpid=$!; wait $mpid || { cat out; fail "mono"; }
at_exit "rm -f /tmp/perf-$mpid.map"
mv "/tmp/perf-$mpid.map" .
map_lines "perf-$mpid.map"
"$CLI" check --strict "perf-$mpid.map" >/dev/null || fail "Mono's map fails --strict"
cd ..
echo PASS
