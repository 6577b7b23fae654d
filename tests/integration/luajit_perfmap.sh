#!/usr/bin/env bash
# `JITHERALD=perfmap luajit -l jitherald` and plain `perf record`: perf report names the
# hot trace "TRACE_1 hot.lua:7" (the perf map is read at report time) with most of the
# samples that fell in traces, and the map holds one line per trace -jv printed, each named
# TRACE_<n> <its -jv location>. (A share of the JIT's samples, not a rank: the script's
# getpid calls put kernel rows beside it, first on some machines.)
. "$(dirname "$0")/lib.sh"
require_tool perf linux-perf
luajit_adapter
private_perf_cache
cd "$LUAJIT_SCRIPTS"
JITHERALD=perfmap perf record -q -e cpu-clock -F 5000 -o "$T/perf.data" -- \
    luajit -jv -l jitherald hot.lua 100 >"$T/out" 2>"$T/jv" || fail "perf record: $(cat "$T/jv")"
pid=$(perf report -i "$T/perf.data" --stdio --sort pid 2>/dev/null | grep -Eo '[0-9]+:luajit' | head -1) || true
pid=${pid%%:*}
map=/tmp/perf-$pid.map
[ -n "$pid" ] && [ -f "$map" ] || fail "no perf map for pid '$pid'"
at_exit "rm -f $map"
grep -q '^total	true$' "$T/out" || fail "script output: $(cat "$T/out")"
# every trace -jv reported, under the same name
n=0
while read -r tr loc; do
    grep -Eq "^[0-9a-f]+ [0-9a-f]+ TRACE_$tr $loc\$" "$map" || fail "TRACE_$tr $loc not in the map: $(cat "$map")"
    n=$((n + 1))
done < <(sed -nE 's/^\[TRACE +([0-9]+) (\([0-9]+\/[0-9]+\) )?([^ ]+).*/\1 \3/p' "$T/jv")
[ "$n" -ge 2 ] || fail "expected a root and a side trace, -jv said: $(cat "$T/jv")"
grep -q ' LuaJIT exit stubs 0-31$' "$map" || fail "exit stubs not named"
perf report -i "$T/perf.data" --stdio --sort dso,sym 2>/dev/null >"$T/report"
grep -Eq '^ +[0-9.]+% +\[JIT\] tid [0-9]+ +\[\.\] TRACE_1 hot\.lua:7 *$' "$T/report" ||
    { head -30 "$T/report"; fail "perf report does not name TRACE_1"; }
sh=$(share "$T/report" '\] TRACE_1 ' '\] TRACE_[0-9]+ ')
[ "$sh" -ge 50 ] || { head -30 "$T/report"; fail "TRACE_1 has only $sh% of the samples in traces"; }
# a trace whose exits reach past the first group: every group it reaches is named (the
# adapter finds them from its snapshots, without traceinfo)
JITHERALD=perfmap JITHERALD_DIR=$T/d sh -c "$PID_EXEC" "$T/pid2" luajit -jv -l jitherald \
    manyexits.lua >"$T/out2" 2>"$T/jv2" || fail "manyexits.lua: $(cat "$T/jv2")"
map2=/tmp/perf-$(cat "$T/pid2").map
at_exit "rm -f $map2"
for g in 0-31 32-63 64-95 96-127 128-159 160-191; do
    grep -q " LuaJIT exit stubs $g\$" "$map2" || fail "exit stubs $g not named: $(grep stubs "$map2")"
done
echo "ok: $n traces named, TRACE_1 has $sh% of the samples in traces; a trace of 164 exits"
echo "    has its 6 exit stub groups named"
