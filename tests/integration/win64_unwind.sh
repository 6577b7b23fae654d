#!/usr/bin/env bash
# Windows x64 under Wine: JIT frames (tests/win64/wjit.c) crossed by a C++ exception caught
# in test_main (a destructor between them must run), by msvcrt's longjmp (a __finally
# between them must run), by RtlCaptureStackBackTrace and by RtlLookupFunctionEntry +
# RtlVirtualUnwind (rbx/rsi restored) — each failing without jitherald and passing with
# JITHERALD=unwind in the environment. Then removal and re-use of addresses, jh_code_move,
# eight threads, 20,000 functions, CFI Windows cannot express, and the DLL with the
# channels Windows has. Wine cannot show what only real Windows does: docs/windows.md.
. "$(dirname "$0")/lib.sh"
wine_setup

for t in throw longjmp backtrace virtual; do
    # Without: the channel off, the same program must fail (crash, terminate, or its checks).
    rc=0; JITHERALD=none run_win "$t-without" unwind_test.exe "$t" || rc=$?
    cat "$T/$t-without.out" "$T/$t-without.err"
    [ $rc -ne 0 ] || fail "$t passed without jitherald: the test cannot fail"
    ! grep -q "^ok " "$T/$t-without.out" || fail "$t said ok without jitherald"
    echo "$t without jitherald: exit status $rc, as expected"

    rc=0; JITHERALD=unwind run_win "$t" unwind_test.exe "$t" || rc=$?
    cat "$T/$t.out" "$T/$t.err"
    [ $rc -eq 0 ] || fail "$t with JITHERALD=unwind: exit status $rc"
    grep -q "^channels 0x8$" "$T/$t.out" || fail "$t: the unwind channel is not live"
    grep -q "^ok $t" "$T/$t.out" || fail "$t: no ok line"
done

for t in reuse threads "many 20000" refused; do
    name=${t%% *}
    rc=0; JITHERALD=unwind run_win "$name" unwind_test.exe $t || rc=$?
    cat "$T/$name.out" "$T/$name.err"
    [ $rc -eq 0 ] || fail "$name: exit status $rc"
done
grep -q "^ok removed" "$T/reuse.out"
grep -q "^ok re-used" "$T/reuse.out"
grep -q "^ok moved" "$T/reuse.out"
grep -q "^ok threads" "$T/threads.out"
grep -q "^ok many: 20000" "$T/many.out"
grep -q "late_push: its CFI row at +0x5 (byte 9 of the CFI) has no Windows unwind code" \
    "$T/refused.err"

# The DLL, through its import library; the channels Windows has, from options and from
# the environment (a channel asked for by name that is not built here is said on stderr).
mkdir -p "$T/dll"
rc=0; JITHERALD=unwind,gdb run_win dll dll_test.exe "Z:${T//\//\\}\\dll" || rc=$?
cat "$T/dll.out" "$T/dll.err"
[ $rc -eq 0 ] || fail "dll_test: exit status $rc"
grep -q "^ok all: channels 0x28$" "$T/dll.out"
grep -q "^ok by name" "$T/dll.out"
grep -q "^env channels 0x8$" "$T/dll.out"
grep -q "error: gdb: not built for this platform" "$T/dll.err"
echo "win64_unwind: all passed"
