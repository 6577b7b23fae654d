#!/usr/bin/env bash
# demo_perf.sh — the README's demo works: `perf record` of minijit + `perf report` names the
# JIT functions through the perf map, and call chains walk through JIT frames.
# A control run without jitherald shows the same code as bare addresses, so the name
# really comes from the perf map jitherald wrote.
. "$(dirname "$0")/lib.sh"
require_tool perf linux-perf
FIB=$MINI/fib.mini

last_pid=
record() { # name JITHERALD-value fib-argument; sets last_pid
    JITHERALD=$2 perf record -F 2000 -g -o "$T/$1.data" "$MINIJIT" "$FIB" "$3" \
        >"$T/$1.out" 2>"$T/$1.err" || { cat "$T/$1.err"; fail "perf record ($1)"; }
    local pid
    pid=$(perf script -i "$T/$1.data" -F pid 2>/dev/null | awk 'NF { print $1; exit }')
    [ -n "$pid" ] || fail "no samples in $1"
    at_exit "rm -f /tmp/perf-$pid.map"
    last_pid=$pid
    perf report --stdio -i "$T/$1.data" --no-children --sort dso,sym -g none \
        >"$T/$1.flat" 2>/dev/null
    perf report --stdio -i "$T/$1.data" --children --sort dso,sym -g none \
        >"$T/$1.chain" 2>/dev/null
}

# 1. The demo itself (make demo), end to end.
BUILD=$B bash "$R/examples/demo.sh" >"$T/demo.out" 2>&1 ||
    { cat "$T/demo.out"; fail "examples/demo.sh failed"; }
grep -q '\[JIT\] tid [0-9]* *\[\.\] fib' "$T/demo.out" ||
    { cat "$T/demo.out"; fail "demo output does not name fib"; }
dpid=$(sed -n 's|.*/tmp/perf-\([0-9]*\)\.map.*|\1|p' "$T/demo.out" | head -1)
[ -z "$dpid" ] || at_exit "rm -f /tmp/perf-$dpid.map"

# 2. With the perf map: fib is the hottest symbol, by name, and the chain reaches the JIT
#    main and the C caller below it through the JIT frames' frame pointers.
record map perfmap 34
pid=$last_pid
grep -q '^63245986$\|^5702887$' "$T/map.out" || fail "wrong fib result: $(cat "$T/map.out")"
[ -s "/tmp/perf-$pid.map" ] || fail "no /tmp/perf-$pid.map"
grep -Eq '^[0-9a-f]+ [0-9a-f]+ fib$' "/tmp/perf-$pid.map" || fail "fib not in the perf map"
top=$(grep -v '^#' "$T/map.flat" | grep -v '^$' | head -1)
echo "hottest: $top"
echo "$top" | grep -Eq '\[JIT\] tid [0-9]+ +\[\.\] fib *$' || { cat "$T/map.flat"; fail "fib is not the top symbol"; }
pct=$(echo "$top" | awk '{ sub("%", "", $1); print int($1) }')
[ "$pct" -ge 50 ] || fail "fib has only $pct% of the samples"
grep -Eq '\[JIT\] tid [0-9]+ +\[\.\] main *$' "$T/map.chain" ||
    { cat "$T/map.chain"; fail "JIT main missing from the call chains"; }
grep -Eq '\[\.\] mj_call *$' "$T/map.chain" ||
    { cat "$T/map.chain"; fail "the C caller below the JIT frames is missing from the call chains"; }

# 3. Control: no channel, no names — the same samples show as raw addresses.
record none none 34
if grep -Eq '\[\.\] fib *$' "$T/none.flat"; then
    cat "$T/none.flat"; fail "fib named without jitherald: the test proves nothing"
fi
grep -Eq '\[JIT\] tid [0-9]+ +\[\.\] 0x[0-9a-f]+ *$' "$T/none.flat" ||
    { cat "$T/none.flat"; fail "control run: no raw JIT addresses"; }
echo "PASS: perf names fib via the perf map ($pct% of samples), chains pass JIT frames"
