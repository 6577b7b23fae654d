#!/usr/bin/env bash
# jit.attach holds one handler per event; the adapter keeps its own attached and calls the
# others' from it. Checked with the churn workload (bench/luajit/stress.lua: roots, side
# traces patching their parents, jit.flush()), every channel but elfmap on:
#   - the script's output is the same with and without the adapter;
#   - the script's own "trace" handler still sees every trace and flush, and the perf map
#     has one TRACE_ line per trace it saw;
#   - -jv given before or after `-l jitherald` still prints every trace, and every trace it
#     prints is in the perf map under the same location; -jdump (which attaches "trace",
#     "record" and "texit") still prints recorded bytecode and IR;
#   - a "trace" handler the script replaces with another, then detaches, gets no event
#     after (the adapter keeps the one to call: open.c, theirs).
. "$(dirname "$0")/lib.sh"
luajit_adapter
S=$R/bench/luajit/stress.lua
export JITHERALD_DIR=$T/d
ALL=perfmap,jitdump,gdb,unwind,auditlog
run() { # label env... -- luajit args...
    local label=$1; shift
    timeout 120 env "$@" sh -c "$PID_EXEC" "$T/$label.pid" luajit "${LJARGS[@]}" \
        >"$T/$label.out" 2>"$T/$label.err" || fail "$label: $(cat "$T/$label.err")"
    at_exit "rm -f /tmp/perf-$(cat "$T/$label.pid").map"
}
map() { echo "/tmp/perf-$(cat "$T/$1.pid").map"; }

# 1. output and the script's own handler
LJARGS=("$S" 150 2 3 count); run plain JITHERALD=
LJARGS=(-l jitherald "$S" 150 2 3 count); run with JITHERALD=$ALL
diff -u "$T/plain.out" "$T/with.out" || fail "the script's output differs"
read -r _ n _ side _ flushes _ < "$T/with.err" || true
[ "${flushes:-0}" = 3 ] && [ "${n:-0}" -gt 100 ] && [ "${side:-0}" -gt 50 ] ||
    fail "the script's handler saw: $(cat "$T/with.err")"
named=$(grep -c ' TRACE_[0-9]* ' "$(map with)")
[ "$named" = "$n" ] || fail "$named traces in the perf map, the script's handler saw $n"

# 2. -jv before and after the adapter
for order in before after; do
    if [ $order = before ]; then LJARGS=(-jv -l jitherald "$S" 40 2 1); else LJARGS=(-l jitherald -jv "$S" 40 2 1); fi
    run "jv-$order" JITHERALD=$ALL
    m=$(map "jv-$order")
    njv=$(grep -c '^\[TRACE  *[0-9]' "$T/jv-$order.err" || true)
    [ "$njv" -gt 20 ] || fail "-jv $order: only $njv traces printed: $(head "$T/jv-$order.err")"
    [ "$(grep -c ' TRACE_[0-9]* ' "$m")" = "$njv" ] || fail "-jv $order: map and -jv disagree"
    sed -nE 's/^\[TRACE +([0-9]+) (\([0-9]+\/[0-9]+\) )?([^ ]+).*/\1 \3/p' "$T/jv-$order.err" |
        while read -r tr loc; do
            grep -q " TRACE_$tr $loc\$" "$m" || fail "-jv $order: TRACE_$tr $loc not in the map"
        done
done

# 3. -jdump: its record handler runs beside the adapter's
LJARGS=(-jdump=bi -l jitherald "$S" 5 2 0); run jdump JITHERALD=$ALL
grep -q '^---- TRACE 1 start' "$T/jdump.out" || fail "-jdump printed no trace: $(head "$T/jdump.out")"
grep -Eq '^0[0-9]{3}  (FORL|ADDVN|MODVN|GGET)' "$T/jdump.out" || fail "-jdump printed no recorded bytecode"
grep -q '^---- TRACE 1 IR' "$T/jdump.out" || fail "-jdump printed no IR"
grep -q ' TRACE_1 stress1:5$' "$(map jdump)" || fail "-jdump: trace 1 not named: $(cat "$(map jdump)")"

# 4. the script's handler replaced, then detached: each event goes to the one attached then
cat >"$T/swap.lua" <<'LUA'
local a, b = 0, 0
local function A(what) if what == "stop" then a = a + 1 end end
local function B(what) if what == "stop" then b = b + 1 end end
local function hot(k)                    -- a new function, so new traces, each phase
  local f = load("return function(n) local s = 0 for i = 1, n do s = s + i % " .. k ..
                 " end return s end")()
  return f(100000)
end
jit.attach(A, "trace"); hot(3); hot(5)
local a1 = a
jit.attach(B, "trace"); hot(7); hot(11)
local a2, b2 = a, b
jit.attach(B); hot(13); hot(17)
print(a1, a2, b2, a, b)
LUA
LJARGS=(-l jitherald "$T/swap.lua"); run swap JITHERALD=perfmap
read -r a1 a2 b2 a b < "$T/swap.out" || true
[ "${a1:-0}" -gt 0 ] && [ "$a2" = "$a1" ] && [ "${b2:-0}" -gt 0 ] && [ "$a" = "$a2" ] &&
    [ "$b" = "$b2" ] || fail "handlers replaced and detached: A saw $a1, $a2, $a; B saw $b2, $b"
echo "ok: $n traces ($side side, $flushes flushes) seen by the script and named; -jv and -jdump work beside;"
echo "    a handler the script replaces or detaches gets no event after"
