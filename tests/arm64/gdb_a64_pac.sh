#!/usr/bin/env bash
# gdb_a64_pac.sh — gdb unwinds JIT frames that sign their return address (PAC-RET, A key),
# stopped at every instruction: tests/arm64/programs/jit_gdb signed, under a qemu-aarch64
# whose gdbstub gives gdb the pointer-authentication mask (qemu >= 8; Debian 12's 7.2 does
# not, so the test takes bookworm-backports' qemu 10 that scripts/arm64-debs.sh unpacks).
# qemu names that register set "org.gnu.gdb.aarch64.pauth_v2", which gdb 13 does not know:
# the test hands gdb qemu's own target description with the set under the name gdb 13
# knows ("pauth", the same two registers first), as a Linux kernel's gdbserver says it.
#   1. `break jit_inner` (pending) stops at its prologue_end: bt names jit_inner
#      a64.jit:11, jit_outer a64.jit:21 (its return address signed on the stack), call_jit
#      and main.
#   2. On the second call, `break *jit_inner` stops at the first instruction (before
#      paciasp), and after each of the 8 `stepi`s through jit_inner (signed, saved, called
#      stop_here, restored, authenticated) bt still reaches main through jit_outer.
#   3. The control: the same code, signed but described without .ra_signed ("unsaid"):
#      bt shows jit_inner's caller as ?? (the signed address, unstripped).
# A process signs with keys of its own, and Linux leaves user addresses' top byte to the
# program (TBI), so the code is 7 bits (48-54): one run in 128 signs jit_inner's return
# address with a code of 0, which looks unsigned to any tool. Each run prints the signed
# register ($x30 at jit_inner's breakpoint); a run whose code is 0 proves nothing and is
# run again with fresh keys (the CI once failed the control that way).
set -u
P=${ARM64_PROG_DIR:?}/jit_gdb
QEMU=${JH_ARM64_DEBS:-/opt/jitherald/arm64-debs}/usr/bin/qemu-aarch64
fail() { echo "FAIL: $*"; exit 1; }
command -v gdb-multiarch >/dev/null || { echo "SKIP gdb-multiarch not installed"; exit 77; }
[ -x "$QEMU" ] || { echo "SKIP no qemu-aarch64 with pointer-authentication registers for gdb at $QEMU (run scripts/arm64-debs.sh, which scripts/install-deps.sh test runs)"; exit 77; }
[ -x "$P" ] || fail "$P not built"
T=$(mktemp -d); trap 'kill -9 "$qpid" 2>/dev/null; rm -rf "$T"' EXIT
# a gdb that never attached leaves qemu waiting for one: 20 s to finish, then SIGKILL
# (qemu-user hands SIGTERM to a guest that has not started, and survives it)
reap() {
    for _ in $(seq 40); do kill -0 "$qpid" 2>/dev/null || break; sleep 0.5; done
    kill -9 "$qpid" 2>/dev/null
    wait "$qpid"
}
SYSROOT=${ARM64_SYSROOT:-/usr/aarch64-linux-gnu}
start() { # MODE: the program under qemu's gdbstub, on a fresh port
    port=$((20000 + RANDOM % 20000))
    "$QEMU" -cpu max -L "$SYSROOT" -g "$port" "$P" "$1" >"$T/prog.out" 2>&1 &
    qpid=$!
    sleep 0.5
}
gdb_at() { # OUT, gdb commands...
    local out=$1; shift
    timeout 120 gdb-multiarch -q -nx -batch -ex "set sysroot $SYSROOT" "$@" >"$out" 2>&1
}

# qemu's target description, with the pauth set under gdb 13's name
start signed
gdb_at "$T/tdesc.out" -ex "file $P" -ex "target remote :$port" \
    -ex "pipe maint print xml-tdesc | sed 's/org.gnu.gdb.aarch64.pauth_v2\"/org.gnu.gdb.aarch64.pauth\"/' > $T/tdesc.xml" \
    -ex kill
reap 2>/dev/null
grep -q 'org.gnu.gdb.aarch64.pauth"' "$T/tdesc.xml" ||
    fail "qemu's gdbstub gives no pointer-authentication registers: $(head -c 300 "$T/tdesc.xml")"

run_gdb() { # MODE OUT
    start "$1"
    local cmds=(-ex "set tdesc filename $T/tdesc.xml" -ex 'set breakpoint pending on'
                -ex "file $P" -ex "target remote :$port" -ex 'break jit_inner' -ex continue
                -ex 'echo ==bt\n' -ex bt -ex 'printf "==lr %#lx\n", $x30')
    if [ "$1" = signed ]; then
        cmds+=(-ex delete -ex 'break *jit_inner' -ex continue -ex 'echo ==bt\n' -ex bt)
        for _ in 1 2 3 4 5 6 7 8; do cmds+=(-ex stepi -ex 'echo ==bt\n' -ex bt); done
        cmds+=(-ex delete -ex continue)
    else
        cmds+=(-ex kill)
    fi
    gdb_at "$2" "${cmds[@]}"
    reap
}

signed_lr() { # OUT: is jit_inner's return address, as signed in that run, a nonzero code?
    local lr
    lr=$(sed -n 's/^==lr //p' "$1" | head -1)
    [ -n "$lr" ] || fail "no ==lr line: gdb did not stop at jit_inner ($1)"
    (( (lr >> 48) & 0x7f ))
}
for try in 1 2 3 4 5; do
    run_gdb signed "$T/gdb.out"; rc=$?
    signed_lr "$T/gdb.out" && break
    echo "(run $try: the return address was signed with a code of 0; again with fresh keys)"
done
cat "$T/gdb.out"
[ "$rc" = 0 ] || fail "the program exited $rc: $(cat "$T/prog.out")"
grep -q 'jit_gdb: done' "$T/prog.out" || fail "the program did not finish"
grep -Eq '^#0 +jit_inner \(\) at a64.jit:11' "$T/gdb.out" ||
    fail "the breakpoint did not stop in jit_inner at a64.jit:11"
# every bt: one "==bt" marker each; all 10 must reach main through jit_outer a64.jit:21
nbt=$(grep -c '^==bt' "$T/gdb.out")
nouter=$(grep -Ec '^#[12] +0x[0-9a-f]+ (\[PAC\] )?in jit_outer \(\) at a64.jit:21' "$T/gdb.out")
nmain=$(grep -Ec '^#[34] +0x[0-9a-f]+ (\[PAC\] )?in main ' "$T/gdb.out")
[ "$nbt" = 10 ] || fail "expected 10 backtraces (a stop and 9 instructions), got $nbt"
[ "$nouter" = 10 ] || fail "only $nouter of 10 backtraces name jit_outer at a64.jit:21"
[ "$nmain" = 10 ] || fail "only $nmain of 10 backtraces reach main"
grep -q 'Backtrace stopped' "$T/gdb.out" && fail "a backtrace stopped early"
grep -q '\[PAC\] in jit_outer' "$T/gdb.out" || fail "gdb never stripped a signed return address"

for try in 1 2 3 4 5; do
    run_gdb unsaid "$T/control.out"
    signed_lr "$T/control.out" && break
    echo "(control run $try: signed with a code of 0; again with fresh keys)"
done
cat "$T/control.out"
grep -Eq '^#1 .* in jit_outer \(\)' "$T/control.out" &&
    fail "control: without .ra_signed, bt should not name the signed frame's caller"
echo "ok: gdb unwinds signed arm64 JIT frames at every instruction (qemu $("$QEMU" --version | head -1 | awk '{print $3}'))"
