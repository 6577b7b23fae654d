#!/usr/bin/env bash
# The audit log of `JITHERALD=auditlog luajit -l jitherald`: every trace -jv reported is a
# code_add named TRACE_<n> <loc> with its machine code and per-guard lines (`show` prints
# hot.lua:9 above the side trace's call into C); linking a side trace is a code_patched of
# its parent; jit.flush() removes every trace and the exit stubs; the adapter's
# trace_stop / trace_flush events are there; and `to-perfmap` names them after the fact.
. "$(dirname "$0")/lib.sh"
luajit_adapter
cd "$LUAJIT_SCRIPTS"
cat >"$T/flush.lua" <<'LUA'
dofile("hot.lua")
jit.flush()
print("flushed")
LUA
JITHERALD=auditlog JITHERALD_DIR=$T/d timeout 60 luajit -jv -l jitherald "$T/flush.lua" 1 \
    >"$T/out" 2>"$T/jv" || fail "$(cat "$T/jv")"
grep -q '^flushed$' "$T/out" || fail "$(cat "$T/out")"
log=$(ls "$T"/d/luajit-*.jhlog)
"$CLI" log "$log" code >"$T/code" || fail "log code"
ntr=$(grep -Ec '^\[TRACE +[0-9]' "$T/jv")
[ "$(grep -Ec ' add +[0-9]+ +TRACE_[0-9]+ hot\.lua:[0-9]+ ' "$T/code")" = "$ntr" ] ||
    { cat "$T/jv" "$T/code"; fail "not one add per trace"; }
grep -Eq ' add +[0-9]+ +LuaJIT exit stubs 0-31 ' "$T/code" || fail "exit stubs not logged"
# each side trace (-jv: "(parent/exit)") patched its parent
nside=$(grep -c '^\[TRACE  *[0-9]* (' "$T/jv")
[ "$nside" -ge 1 ] || fail "no side trace: $(cat "$T/jv")"
[ "$(grep -Ec ' patch +[0-9]+ +TRACE_1 hot\.lua:7 ' "$T/code")" = "$nside" ] ||
    { cat "$T/code"; fail "the parent was not patched once per side trace"; }
# a patch logs the bytes the link rewrote (the branch to the side trace), not the whole
# parent again, and the parent's code as logged then branches to the side trace
"$CLI" log "$log" list >"$T/list" || fail "log list"
read -r t1 t1size <<<"$(sed -n 's/.* code_add  *#[0-9]* TRACE_1 hot\.lua:7 0x\([0-9a-f]*\) \([0-9]*\) B.*/\1 \2/p' "$T/list")"
t2=$(sed -n 's/.* code_add  *#[0-9]* TRACE_2 hot\.lua:9 0x\([0-9a-f]*\) .*/\1/p' "$T/list")
plen=$(sed -n 's/.* code_patched #[0-9]* TRACE_1 hot\.lua:7 \([0-9]*\) B at 0x.*/\1/p' "$T/list" | sort -n | tail -1)
[ -n "$t1" ] && [ -n "$t2" ] && [ -n "$plen" ] || { cat "$T/list"; fail "no TRACE_1, TRACE_2 or patch in the list"; }
[ "$plen" -lt "$t1size" ] && [ "$plen" -le 64 ] ||
    { grep code_patched "$T/list"; fail "a patch logged $plen bytes of the $t1size-byte parent"; }
"$CLI" log "$log" show "TRACE_1 hot.lua:7" >"$T/show1" || fail "show TRACE_1"
grep -Eq "j[a-z]+ +0x$t2\$" "$T/show1" || { cat "$T/show1"; fail "TRACE_1 as logged never branches to TRACE_2 (0x$t2)"; }
# the flush removed everything: nothing live at the end
grep -q ', 0 live at the end of the log' "$T/code" || { tail -3 "$T/code"; fail "code left live after jit.flush()"; }
"$CLI" log "$log" show "TRACE_2 hot.lua:9" >"$T/show" || fail "show TRACE_2"
grep -Eq '^.*hot\.lua:9 +s = s \+ ffi\.C\.getpid\(\) % 7$' "$T/show" || { cat "$T/show"; fail "show: no line 9"; }
grep -q '(frameless' "$T/show" || fail "show: the trace has no unwind description"
"$CLI" log "$log" events >"$T/events" || fail "log events"
grep -q 'trace_stop trace=1 what="TRACE_1 hot.lua:7"' "$T/events" || { cat "$T/events"; fail "events"; }
grep -q 'trace_flush' "$T/events" || fail "no trace_flush event"
"$CLI" log "$log" to-perfmap >"$T/map" || fail "to-perfmap"
grep -Eq '^[0-9a-f]+ [0-9a-f]+ TRACE_1 hot\.lua:7$' "$T/map" || fail "to-perfmap: $(cat "$T/map")"
echo "ok: $ntr traces, $nside side traces, flushed"
