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
    perf report --stdio -i "$T/$1.data" --no-children --sort sym -g folded,0,caller \
        >"$T/$1.chain" 2>/dev/null
}

# 1. The demo itself (make demo), end to end.
BUILD=$B bash "$R/examples/demo.sh" >"$T/demo.out" 2>&1 ||
    { cat "$T/demo.out"; fail "examples/demo.sh failed"; }
grep -q '\[JIT\] tid [0-9]* *\[\.\] fib' "$T/demo.out" ||
    { cat "$T/demo.out"; fail "demo output does not name fib"; }
# step 5 shows the chain: minijit's C caller, the JIT's main, fib under fib
sed -n '/== 5\./,/== 6\./p' "$T/demo.out" >"$T/demo.step5"
for want in 'mj_call minijit\.c:[0-9]+' '^ +main \+[0-9]+' '--fib \+[0-9]+$' '\|--[0-9.]+%--fib \+[0-9]+$'; do
    grep -Eq -- "$want" "$T/demo.step5" ||
        { cat "$T/demo.step5"; fail "demo step 5 (call chains) lacks /$want/"; }
done
[ "$(grep -Ec -- '--fib \+[0-9]+$' "$T/demo.step5")" -ge 3 ] ||
    { cat "$T/demo.step5"; fail "demo step 5 does not show fib calling fib"; }
dpid=$(sed -n 's|.*/tmp/perf-\([0-9]*\)\.map.*|\1|p' "$T/demo.out" | head -1)
[ -z "$dpid" ] || at_exit "rm -f /tmp/perf-$dpid.map"

# 2. With the perf map: fib is named, with most of the JIT's samples, and the chain reaches
#    the JIT main and the C caller below it through the JIT frames' frame pointers.
record map perfmap 34
pid=$last_pid
grep -q '^63245986$\|^5702887$' "$T/map.out" || fail "wrong fib result: $(cat "$T/map.out")"
[ -s "/tmp/perf-$pid.map" ] || fail "no /tmp/perf-$pid.map"
grep -Eq '^[0-9a-f]+ [0-9a-f]+ fib$' "/tmp/perf-$pid.map" || fail "fib not in the perf map"
# What a user looks for: fib named, with most of the JIT's samples (not a rank: on a loaded
# machine the kernel may take a large share of the whole; lib.sh: share).
grep -Eq '^ +[0-9.]+% +\[JIT\] tid [0-9]+ +\[\.\] fib *$' "$T/map.flat" || { cat "$T/map.flat"; fail "perf report does not name fib"; }
pct=$(share "$T/map.flat" '\[JIT\] tid [0-9]+ +\[\.\] fib *$' '\[JIT\] tid [0-9]+ +\[\.\]')
echo "fib: $pct% of the JIT samples"
[ "$pct" -ge 50 ] || { cat "$T/map.flat"; fail "fib has only $pct% of the JIT samples"; }
# the chains walk from the C caller through the JIT main into fib calling fib
grep -Eq '(^|;)mj_call;main;fib;fib(;|$)' "$T/map.chain" ||
    { head -20 "$T/map.chain"; fail "no chain mj_call -> JIT main -> fib -> fib"; }

# 3. Control: no channel, no names — the same samples show as raw addresses.
record none none 34
if grep -Eq '\[\.\] fib *$' "$T/none.flat"; then
    cat "$T/none.flat"; fail "fib named without jitherald: the test proves nothing"
fi
grep -Eq '\[JIT\] tid [0-9]+ +\[\.\] 0x[0-9a-f]+ *$' "$T/none.flat" ||
    { cat "$T/none.flat"; fail "control run: no raw JIT addresses"; }
echo "PASS: perf names fib via the perf map ($pct% of the JIT samples), chains pass JIT frames"
