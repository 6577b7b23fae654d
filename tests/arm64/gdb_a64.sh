#!/usr/bin/env bash
# gdb_a64.sh — the gdb channel on arm64: tests/arm64/programs/jit_gdb under
# `qemu-aarch64 -g PORT`, gdb-multiarch attached through qemu's gdbstub. A pending
# `break jit_inner` must stop in the JIT code at its prologue_end (a64.jit:11), and `bt`
# must name jit_inner and jit_outer with their file:line, then call_jit and main.
# Run by the arm64 tier (make test-arm64) with ARM64_PROG_DIR and ARM64_QEMU set.
set -u
P=${ARM64_PROG_DIR:?}/jit_gdb
QEMU=${ARM64_QEMU:?}
fail() { echo "FAIL: $*"; exit 1; }
command -v gdb-multiarch >/dev/null || { echo "SKIP gdb-multiarch not installed"; exit 77; }
[ -x "$P" ] || fail "$P not built"
T=$(mktemp -d); trap 'kill -9 "$qpid" 2>/dev/null; rm -rf "$T"' EXIT
port=$((20000 + RANDOM % 20000))
# shellcheck disable=SC2086 # QEMU is a command and its options
$QEMU -g "$port" "$P" >"$T/prog.out" 2>&1 &
qpid=$!
sleep 0.5
timeout 120 gdb-multiarch -q -nx -batch -ex "set sysroot ${ARM64_SYSROOT:-/usr/aarch64-linux-gnu}" \
    -ex 'set breakpoint pending on' -ex "file $P" -ex "target remote :$port" \
    -ex 'break jit_inner' -ex continue -ex bt -ex continue >"$T/gdb.out" 2>&1
# a gdb that never attached leaves qemu waiting for one: 20 s to finish, then SIGKILL
# (qemu-user hands SIGTERM to a guest that has not started, and survives it)
for _ in $(seq 40); do kill -0 "$qpid" 2>/dev/null || break; sleep 0.5; done
kill -9 "$qpid" 2>/dev/null
wait "$qpid"; rc=$?
cat "$T/gdb.out"
[ "$rc" = 0 ] || fail "the program exited $rc: $(cat "$T/prog.out")"
grep -q 'jit_gdb: done' "$T/prog.out" || fail "the program did not finish"
grep -Eq '^#0 +(0x[0-9a-f]+ in )?jit_inner \(\) at a64.jit:11' "$T/gdb.out" ||
    fail "the breakpoint did not stop in jit_inner at a64.jit:11"
grep -Eq '^#1 +0x[0-9a-f]+ in jit_outer \(\) at a64.jit:21' "$T/gdb.out" ||
    fail "bt does not name jit_outer at a64.jit:21 (the call)"
grep -Eq '^#2 +0x[0-9a-f]+ in call_jit' "$T/gdb.out" || fail "bt does not reach call_jit"
grep -Eq '^#3 +0x[0-9a-f]+ in main' "$T/gdb.out" || fail "bt does not reach main"
echo "ok: gdb-multiarch through qemu's gdbstub: break and bt in arm64 JIT code"
