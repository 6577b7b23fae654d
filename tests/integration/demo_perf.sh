#!/usr/bin/env bash
# demo_perf.sh — the README's demo works: `perf record` of minijit + `perf report` names the
# JIT functions through the perf map, and call chains walk through JIT frames.
# A control run without jitherald shows the same code as bare addresses, so the name
# really comes from the perf map jitherald wrote.
set -eu
: "${JH_BUILD:?run through tests/run.sh}" "${JH_ROOT:?}"
MINIJIT=$JH_BUILD/examples/minijit
FIB=$JH_ROOT/examples/minijit/fib.mini
command -v perf >/dev/null || { echo "SKIP perf not installed"; exit 77; }
[ -x "$MINIJIT" ] || { echo "FAIL: $MINIJIT not built"; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/jh-demo-perf.XXXXXX")
pids=()
cleanup() {
    for p in "${pids[@]}"; do rm -f "/tmp/perf-$p.map"; done
    rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

last_pid=
record() { # name JITHERALD-value fib-argument; sets last_pid
    JITHERALD=$2 perf record -F 2000 -g -o "$tmp/$1.data" "$MINIJIT" "$FIB" "$3" \
        >"$tmp/$1.out" 2>"$tmp/$1.err" || { cat "$tmp/$1.err"; fail "perf record ($1)"; }
    local pid
    pid=$(perf script -i "$tmp/$1.data" -F pid 2>/dev/null | awk 'NF { print $1; exit }')
    [ -n "$pid" ] || fail "no samples in $1"
    pids+=("$pid")
    last_pid=$pid
    perf report --stdio -i "$tmp/$1.data" --no-children --sort dso,sym -g none \
        >"$tmp/$1.flat" 2>/dev/null
    perf report --stdio -i "$tmp/$1.data" --children --sort dso,sym -g none \
        >"$tmp/$1.chain" 2>/dev/null
}

# 1. The demo itself (make demo), end to end.
BUILD=$JH_BUILD bash "$JH_ROOT/examples/demo.sh" >"$tmp/demo.out" 2>&1 ||
    { cat "$tmp/demo.out"; fail "examples/demo.sh failed"; }
grep -q '\[JIT\] tid [0-9]* *\[\.\] fib' "$tmp/demo.out" ||
    { cat "$tmp/demo.out"; fail "demo output does not name fib"; }
dpid=$(sed -n 's|.*/tmp/perf-\([0-9]*\)\.map.*|\1|p' "$tmp/demo.out" | head -1)
[ -n "$dpid" ] && pids+=("$dpid")

# 2. With the perf map: fib is the hottest symbol, by name, and the chain reaches the JIT
#    main and the C caller below it through the JIT frames' frame pointers.
record map perfmap 34
pid=$last_pid
grep -q '^63245986$\|^5702887$' "$tmp/map.out" || fail "wrong fib result: $(cat "$tmp/map.out")"
[ -s "/tmp/perf-$pid.map" ] || fail "no /tmp/perf-$pid.map"
grep -Eq '^[0-9a-f]+ [0-9a-f]+ fib$' "/tmp/perf-$pid.map" || fail "fib not in the perf map"
top=$(grep -v '^#' "$tmp/map.flat" | grep -v '^$' | head -1)
echo "hottest: $top"
echo "$top" | grep -Eq '\[JIT\] tid [0-9]+ +\[\.\] fib *$' || { cat "$tmp/map.flat"; fail "fib is not the top symbol"; }
pct=$(echo "$top" | awk '{ sub("%", "", $1); print int($1) }')
[ "$pct" -ge 50 ] || fail "fib has only $pct% of the samples"
grep -Eq '\[JIT\] tid [0-9]+ +\[\.\] main *$' "$tmp/map.chain" ||
    { cat "$tmp/map.chain"; fail "JIT main missing from the call chains"; }
grep -Eq '\[\.\] mj_call *$' "$tmp/map.chain" ||
    { cat "$tmp/map.chain"; fail "the C caller below the JIT frames is missing from the call chains"; }

# 3. Control: no channel, no names — the same samples show as raw addresses.
record none none 34
if grep -Eq '\[\.\] fib *$' "$tmp/none.flat"; then
    cat "$tmp/none.flat"; fail "fib named without jitherald: the test proves nothing"
fi
grep -Eq '\[\.\] 0x0*7f' "$tmp/none.flat" || { cat "$tmp/none.flat"; fail "control run: no raw JIT addresses"; }
echo "PASS: perf names fib via the perf map ($pct% of samples), chains pass JIT frames"
