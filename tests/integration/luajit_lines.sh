#!/usr/bin/env bash
# Each recorded bytecode's line: the adapter reads it, at the "record" event, from the
# frame executing that bytecode (lua_getstack/lua_getinfo: no table made), where funcinfo
# builds a table of 16 fields and a string per bytecode position (~1 us a trace on the
# churn workload). The frame must say what funcinfo says: with JITHERALD_LUAJIT_VERIFY=1
# the adapter asks both for every new position and counts where they differ. On the churn
# workload (roots, side traces, calls into a helper, flushes), on hot.lua (a side trace
# calling into C through the FFI) and on errors.lua (errors raised through traces), with
# -jdump's own record handler beside the adapter's in one of them. The IR counts' probes
# call traceir's C function straight (not through lua_call), but beside -jdump's handler;
# the stop's snapshots come from tracesnap's C function called straight, each checked
# against the same call through lua_call, and a snapshot read that fails loses no trace.
. "$(dirname "$0")/lib.sh"
luajit_adapter
cd "$LUAJIT_SCRIPTS" || fail "no $LUAJIT_SCRIPTS"
cat >"$T/check.lua" <<'LUA'
local jh = require("jitherald")
local script = table.remove(arg, 1)
arg[0] = script
dofile(script)
local s = jh.stats()
io.stderr:write(string.format("checked %s differ %s traces %s\n", tostring(s.lines_checked),
                              tostring(s.lines_differ), tostring(s.traces)))
io.stderr:write(string.format("rows %s differ %s records %s merged %s\n",
                              tostring(s.rows_checked), tostring(s.rows_differ),
                              tostring(s.records), tostring(s.records_merged)))
io.stderr:write(string.format("starts %s\n", tostring(s.start_lines_recorded)))
io.stderr:write(string.format("counts %s differ %s guessed %s direct %s\n",
                              tostring(s.ir_counts_checked), tostring(s.ir_counts_differ),
                              tostring(s.ir_counts_guessed), tostring(s.ir_probes_direct)))
io.stderr:write(string.format("snaps %s differ %s\n", tostring(s.snaps_checked),
                              tostring(s.snaps_differ)))
LUA
check() { # label min_checked min_rows luajit-args...
    local label=$1 min=$2 min_rows=$3; shift 3
    JITHERALD=gdb JITHERALD_LUAJIT_VERIFY=1 JITHERALD_DEBUG=1 JITHERALD_DIR=$T/d timeout 120 \
        luajit "$@" >"$T/$label.out" 2>"$T/$label.err" || fail "$label: $(tail -5 "$T/$label.err")"
    read -r _ checked _ differ _ traces < <(grep '^checked ' "$T/$label.err") || true
    grep 'line .* from the frame' "$T/$label.err" | head -5
    [ "${differ:-x}" = 0 ] || fail "$label: $differ of $checked lines differ from funcinfo's"
    [ "${checked:-0}" -ge "$min" ] || fail "$label: only ${checked:-none} lines checked ($traces traces)"
    echo "$label: $checked bytecode lines, $traces traces: the frame's line is funcinfo's"
    # a trace's start line not seen before comes from its first record (and is counted
    # among those checked against funcinfo above)
    local starts
    read -r _ starts < <(grep '^starts ' "$T/$label.err") || true
    [ "$label" != stress ] || [ "${starts:-0}" -gt 0 ] ||
        fail "$label: no trace's start line came from its record ($traces traces)"
    echo "$label: ${starts} start lines from the trace's first record"
    local rows rdiff records merged
    read -r _ rows _ rdiff _ records _ merged < <(grep '^rows ' "$T/$label.err") || true
    grep 'rows differ without' "$T/$label.err" | head -5
    [ "${rdiff:-x}" = 0 ] || fail "$label: $rdiff of $rows traces' rows differ without the repeated records"
    [ "${rows:-0}" -ge "$min_rows" ] || fail "$label: only ${rows:-none} traces' rows compared"
    [ "${merged:-0}" -gt 0 ] || fail "$label: no record repeating the line before was left out ($records records)"
    echo "$label: $merged of $records records repeat the line before; $rows traces' rows the same without them"
    # each kept record's IR count, probed from the gap its span made when last recorded,
    # is the count probed one by one (stress.lua records the same code in many traces)
    local counts cdiff guessed direct
    read -r _ counts _ cdiff _ guessed _ direct < <(grep '^counts ' "$T/$label.err") || true
    grep 'from the gap guessed' "$T/$label.err" | head -5
    [ "${cdiff:-x}" = 0 ] || fail "$label: $cdiff of $counts IR counts differ where guessed"
    [ "${counts:-0}" -ge "$min" ] || fail "$label: only ${counts:-none} IR counts checked"
    [ "$label" != stress ] || [ "${guessed:-0}" -gt 0 ] ||
        fail "$label: no IR count started from a gap seen before ($counts counts)"
    echo "$label: $counts IR counts the same as probed one by one, $guessed from a gap seen before"
    # those one by one went through lua_call, the others called traceir's C function
    # straight, but where -jdump's own record handler gets the event's arguments after ours
    if [ "$label" = jdump ]; then
        [ "${direct:-x}" = 0 ] || fail "$label: $direct probes called traceir straight beside -jdump's handler"
    else
        [ "${direct:-0}" -gt 0 ] || fail "$label: no probe called traceir straight ($counts counts)"
    fi
    echo "$label: ${direct} probes called traceir's C function straight"
    # the stop reads the snapshots in one protected call, tracesnap's C function called
    # straight (gather.c): each the same as through lua_call, and none past the last
    local snaps sdiff
    read -r _ snaps _ sdiff < <(grep '^snaps ' "$T/$label.err") || true
    [ "${sdiff:-x}" = 0 ] || fail "$label: $sdiff of $snaps snapshots differ from tracesnap through lua_call"
    [ "${snaps:-0}" -ge "$min_rows" ] || fail "$label: only ${snaps:-none} snapshots compared"
    echo "$label: $snaps snapshots read straight the same as through lua_call"
}
check stress 500 100 "$T/check.lua" "$R/bench/luajit/stress.lua" 100 2 2
check hot 3 1 "$T/check.lua" hot.lua 2
check errors 3 1 "$T/check.lua" errors.lua
check jdump 3 1 -jdump=b "$T/check.lua" hot.lua 2
# a snapshot read that fails (here a tracesnap that raises, through lua_call: an error as
# an out-of-memory one in its table would be) loses no trace: each is announced with its
# start line, and the exit stub groups are found without the snapshots
cat >"$T/snapfail.lua" <<'LUA'
local ju = require("jit.util")
local tracesnap = ju.tracesnap
ju.tracesnap = function(tr, n) if n == 1 then error("no snapshot 1") end return tracesnap(tr, n) end
local jh = require("jitherald")
local stops = 0
jit.attach(function(what) if what == "stop" then stops = stops + 1 end end, "trace")
arg[0] = "hot.lua"; arg[1] = "2"
dofile("hot.lua")
local groups = 0
for _, r in ipairs(jh.live()) do if r.name:match("^LuaJIT exit stubs") then groups = groups + 1 end end
io.stderr:write(string.format("snapfail stops %d traces %d failed %d groups %d\n", stops,
                              jh.stats().traces, jh.stats().failed, groups))
LUA
JITHERALD=gdb,auditlog JITHERALD_DIR=$T/d timeout 60 luajit "$T/snapfail.lua" >"$T/snapfail.out" 2>"$T/snapfail.err" ||
    fail "snapfail: $(tail -5 "$T/snapfail.err")"
read -r _ _ stops _ traces _ failed _ groups < <(grep '^snapfail ' "$T/snapfail.err") || true
[ "${stops:-0}" -gt 0 ] && [ "$traces" = "$stops" ] && [ "$failed" = 0 ] && [ "${groups:-0}" -gt 0 ] ||
    fail "snapfail: $(cat "$T/snapfail.err")"
echo "snapfail: $traces of $stops traces announced, $groups exit stub groups, tracesnap failing"
echo "ok: every recorded bytecode's line read from its frame is the one funcinfo gives, and"
echo "    the records that repeat the line before them change no trace's rows, and an IR"
echo "    count probed from the gap seen before is the count, traceir called straight or not,"
echo "    and each snapshot read straight is the one lua_call gives; a snapshot read that"
echo "    fails loses no trace"
