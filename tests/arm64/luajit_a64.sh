#!/usr/bin/env bash
# luajit_a64.sh — a real JIT on arm64: Debian's arm64 LuaJIT (unpacked by
# scripts/arm64-debs.sh into $JH_ARM64_DEBS) under qemu-aarch64, with the LuaJIT adapter
# of this tree and build-arm64's libjitherald.so.
#  1. gdb: `JITHERALD=gdb luajit -l jitherald hot.lua` under `qemu-aarch64 -g PORT`,
#     gdb-multiarch attached through qemu's gdbstub. `break TRACE_1`, pending until LuaJIT
#     compiles trace 1, hits in it: frame #0 is `TRACE_1 hot.lua:7 () at hot.lua:7`,
#     `info symbol $pc` names it, and the line of its guard `if i % 64 == 0` (hot.lua:8)
#     is code of trace 1 (the adapter reads arm64 guards: b.cond, cbz... to exit stubs);
#     then `break TRACE_2` hits in the side trace at its line, hot.lua:9. gdb finds
#     libjitherald.so (whose __jit_debug_register_code it watches) only through
#     solib-search-path: with `set sysroot` alone it looks under the sysroot and never sees
#     a trace.
#  2. errors.lua (tests/integration/luajit): five Lua errors raised from C inside a trace
#     (string.rep's "not enough memory"), each caught by pcall; then a full GC, an FFI
#     callback and a new trace. With JITHERALD=gdb and with every channel, the output is
#     exactly that of plain LuaJIT, exit 0. Trace frames get no unwind description on
#     arm64 (the adapter's is x86-64 only): the error reaches LuaJIT's own FDE for its code
#     area, as without jitherald.
#  3. The files that run wrote (every channel), read by the host's x86-64 CLI: the audit
#     log names the trace the errors went through (errors.lua:45) and the one compiled
#     after them (errors.lua:62); the perf map and the jitdump (e_machine arm64) pass
#     `jitherald check` and name the same traces.
# Run by the arm64 tier (make test-arm64) with ARM64_QEMU, JH_ARM64_DEBS, JH_BUILD (the
# arm64 build) and JH_HOST_CLI (the host's build/jitherald) set.
set -u
DEBS=${JH_ARM64_DEBS:-/opt/jitherald/arm64-debs}
LJ=$DEBS/usr/bin/luajit
QEMU=${ARM64_QEMU:?}
R=${JH_ROOT:?}
LIB=${JH_BUILD:?}/libjitherald.so.0
CLI=${JH_HOST_CLI:-$R/build/jitherald}
fail() { echo "FAIL: $*"; exit 1; }
[ -x "$LJ" ] || { echo "SKIP no arm64 LuaJIT at $LJ (scripts/arm64-debs.sh unpacks Debian's there)"; exit 77; }
command -v gdb-multiarch >/dev/null || { echo "SKIP gdb-multiarch not installed"; exit 77; }
[ -f "$LIB" ] || fail "$LIB not built (make test-arm64)"
[ -x "$CLI" ] || fail "$CLI not built (make)"
T=$(mktemp -d "${TMPDIR:-/tmp}/jh-luajit_a64.XXXXXX")
qpid=
cleanup() {
    [ -n "$qpid" ] && kill -9 "$qpid" 2>/dev/null
    for f in "$T"/pid.*; do [ -f "$f" ] && rm -f "/tmp/perf-$(cat "$f").map"; done
    rm -rf "$T"
}
trap cleanup EXIT
export JITHERALD_LIB=$LIB LUA_PATH="$R/adapters/luajit/?.lua;;" JITHERALD_DIR=$T/d
cd "$R/tests/integration/luajit" || fail "no tests/integration/luajit"

# ---- 1. gdb names the traces ----------------------------------------------------------
port=$((20000 + RANDOM % 20000))
# shellcheck disable=SC2086 # QEMU is a command and its options
JITHERALD=gdb $QEMU -g "$port" "$LJ" -l jitherald hot.lua 3 >"$T/prog.out" 2>&1 &
qpid=$!
sleep 0.5
timeout 60 gdb-multiarch -q -nx -batch -ex "set sysroot ${ARM64_SYSROOT:-/usr/aarch64-linux-gnu}" \
    -ex "set solib-search-path $(dirname "$LIB")" -ex 'set breakpoint pending on' \
    -ex "file $LJ" -ex "target remote :$port" \
    -ex 'break TRACE_1' -ex continue -ex bt -ex 'info symbol $pc' -ex 'info line hot.lua:8' -ex delete \
    -ex 'break TRACE_2' -ex continue -ex 'info symbol $pc' -ex delete \
    -ex continue >"$T/gdb.out" 2>&1
# a gdb that gave up leaves luajit stopped in qemu: 20 s to finish, then SIGKILL (qemu-user
# hands SIGTERM to the guest, which a stopped guest never takes)
for _ in $(seq 40); do kill -0 "$qpid" 2>/dev/null || break; sleep 0.5; done
kill -9 "$qpid" 2>/dev/null
wait "$qpid"; rc=$?; qpid=
cat "$T/gdb.out"
[ "$rc" = 0 ] || fail "luajit exited $rc under gdb: $(cat "$T/prog.out")"
grep -q '^total	true$' "$T/prog.out" || fail "hot.lua did not finish: $(cat "$T/prog.out")"
! grep '^jitherald (luajit):' "$T/prog.out" || fail "the adapter reported an error"
grep -q 'Breakpoint 1 (TRACE_1) pending' "$T/gdb.out" || fail "break TRACE_1 is not pending"
grep -Eq '^Breakpoint 1, (0x[0-9a-f]+ in )?TRACE_1 hot\.lua:7 \(\) at hot\.lua:7$' "$T/gdb.out" ||
    fail "break TRACE_1 did not stop in trace 1 at hot.lua:7"
grep -Eq '^#0 +(0x[0-9a-f]+ in )?TRACE_1 hot\.lua:7 \(\) at hot\.lua:7$' "$T/gdb.out" ||
    fail "bt's frame #0 is not TRACE_1 hot.lua:7 at hot.lua:7"
grep -Eq '^TRACE_1 \+ [0-9]+ in section \.text' "$T/gdb.out" || fail "info symbol \$pc does not name TRACE_1"
grep -Eq '^Line 8 of "hot\.lua" starts at address 0x[0-9a-f]+ <TRACE_1 hot\.lua:7\+[0-9]+>' "$T/gdb.out" ||
    fail "no code of trace 1 has the line of its guard i % 64 == 0 (hot.lua:8)"
grep -Eq '^Breakpoint 2, (0x[0-9a-f]+ in )?TRACE_2 hot\.lua:9 \(\) at hot\.lua:9$' "$T/gdb.out" ||
    fail "break TRACE_2 did not stop in the side trace at hot.lua:9"
echo "ok: gdb-multiarch names LuaJIT's traces and their lines"

# ---- 2. errors through a trace leave the VM healthy -------------------------------------
# shellcheck disable=SC2086
timeout 60 $QEMU "$LJ" errors.lua >"$T/plain" 2>&1 || fail "plain LuaJIT: $(cat "$T/plain")"
grep -q '^healthy$' "$T/plain" || fail "errors.lua is broken: $(cat "$T/plain")"
[ "$(grep -c 'not enough memory' "$T/plain")" = 5 ] || fail "errors: $(cat "$T/plain")"
# Each error leaves its trace as a trace exit (LuaJIT's personality for the code area turns
# it into one): a texit handler, on stderr, shows that the five went through the trace of
# fill's loop, whose number the `all` run's audit log gives.
texit='jit.attach(function(tr) io.stderr:write("texit ", tr, "\n") end, "texit")'
for ch in all gdb; do
    # shellcheck disable=SC2016,SC2086 # $$ is the shell's, exec'd into qemu (its pid)
    JITHERALD=$ch JITHERALD_DIR=$T/d.$ch timeout 60 sh -c 'echo $$ >"$0"; exec "$@"' "$T/pid.$ch" \
        $QEMU "$LJ" -l jitherald -e "$texit" errors.lua >"$T/out" 2>"$T/err.$ch" ||
        fail "JITHERALD=$ch: exit $?: $(cat "$T/out" "$T/err.$ch")"
    diff -u "$T/plain" "$T/out" || fail "JITHERALD=$ch: the output differs from plain LuaJIT's"
    ! grep '^jitherald (luajit):' "$T/err.$ch" || fail "JITHERALD=$ch: the adapter reported an error"
    if [ "$ch" = all ]; then
        pid=$(cat "$T/pid.all")
        "$CLI" log "$T/d.all/luajit-$pid.jhlog" code >"$T/code" 2>&1 || fail "jitherald log: $(cat "$T/code")"
        cat "$T/code"
        tr=$(sed -n 's/^ .* add  *[0-9][0-9]*  *TRACE_\([0-9][0-9]*\) errors\.lua:45 .* errors\.lua:45$/\1/p' "$T/code")
        [ -n "$tr" ] || fail "the audit log does not name a trace for fill's loop (errors.lua:45)"
    fi
    [ "$(grep -c "^texit $tr\$" "$T/err.$ch")" = 5 ] ||
        fail "JITHERALD=$ch: the errors did not all leave trace $tr: $(sort "$T/err.$ch" | uniq -c)"
done
echo "ok: five errors through trace $tr, then a healthy VM, with JITHERALD=all and gdb"

# ---- 3. the host's CLI reads what the arm64 VM wrote ------------------------------------
# (the `all` run's: its audit log named trace $tr above)
grep -Eq ' add +[0-9]+ +TRACE_[0-9]+ errors\.lua:62 .* errors\.lua:62$' "$T/code" ||
    fail "the audit log does not name the trace compiled after the errors (errors.lua:62)"
map=/tmp/perf-$pid.map
"$CLI" check "$map" || fail "jitherald check $map: $(cat "$map")"
grep -Eq "^[0-9a-f]+ [0-9a-f]+ TRACE_$tr errors\.lua:45\$" "$map" || fail "perf map: $(cat "$map")"
dump=$T/d.all/jit-$pid.dump
"$CLI" check "$dump" || fail "jitherald check $dump"
"$CLI" inspect "$dump" >"$T/dump" || fail "jitherald inspect $dump"
grep -q 'elf_mach 183 (arm64)' "$T/dump" || fail "jitdump header: $(head -n 1 "$T/dump")"
grep -Eq ' LOAD .* TRACE_[0-9]+ errors\.lua:62$' "$T/dump" || fail "jitdump: $(cat "$T/dump")"
echo "ok: the audit log, perf map and jitdump of the arm64 VM name its traces"
