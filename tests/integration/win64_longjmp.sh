#!/usr/bin/env bash
# The Windows example (examples/win64/longjmp_vm.c) under Wine: the crash MoarVM hit. An op
# longjmps back to the interpreter through two JIT frames; msvcrt's longjmp unwinds frame by
# frame (mingw-w64's setjmp names the frame), and the interpreter's frame has an unwind
# handler between them.
#   - without jitherald (JITHERALD=none) the walk loses its way in the JIT frames: Wine says
#     "RtlUnwindEx invalid frame" (where Windows raises STATUS_BAD_STACK and the process
#     ends), lands the longjmp anyway and skips the handler: the example must say FAIL, exit 1;
#   - with JITHERALD=unwind the walk crosses them: the handler runs for every longjmp, no
#     invalid frame;
#   - GCC's __builtin_longjmp and msvcrt's longjmp from _setjmp(buf, NULL) do not unwind: they
#     cross the same frames either way, running no handler.
. "$(dirname "$0")/lib.sh"
wine_setup
EXD=${JH_WIN_BUILD:-$R/build-win64}/examples
[ -f "$EXD/longjmp_vm.exe" ] || fail "$EXD/longjmp_vm.exe not built (make win64-tests)"

run_ex() { # NAME JITHERALD MODE: the example, Wine's unwinder errors kept on stderr
    local rc=0
    (cd "$EXD" && JITHERALD=$2 WINEDEBUG=-all,err+unwind timeout -k 5 60 wine longjmp_vm.exe "$3") \
        >"$T/$1.out" 2>"$T/$1.err" || rc=$?
    sed -i 's/\r$//' "$T/$1.out" "$T/$1.err"
    cat "$T/$1.out"
    return $rc
}
invalid() { grep -c 'err:unwind:RtlUnwindEx invalid frame' "$T/$1.err" || true; }

# Without: the unwinding longjmp cannot cross the JIT frames.
rc=0; run_ex none none msvcrt || rc=$?
[ "$rc" = 1 ] || { cat "$T/none.err"; fail "without jitherald: exit status $rc, not 1"; }
grep -q '^longjmp: msvcrt; JIT unwind data: none$' "$T/none.out" || fail "without: the channel is on"
grep -q "^FAIL: the interpreter's handler ran for [0-9]* of 100 longjmps" "$T/none.out" ||
    fail "without jitherald: no FAIL line saying the handler was skipped"
n=$(invalid none)
[ "$n" -ge 1 ] || { cat "$T/none.err"; fail "without jitherald: Wine's unwinder did not report an invalid frame"; }
echo "without jitherald: exit 1, Wine's RtlUnwindEx reported $n invalid frames (Windows: STATUS_BAD_STACK)"

# With: every longjmp walks through both JIT frames to the interpreter's handler.
rc=0; run_ex unwind unwind msvcrt || rc=$?
[ "$rc" = 0 ] || { cat "$T/unwind.err"; fail "with JITHERALD=unwind: exit status $rc"; }
grep -q '^longjmp: msvcrt; JIT unwind data: registered' "$T/unwind.out" || fail "with: the channel is off"
grep -q "^ok: 100 longjmps from an op through 2 JIT frames, the interpreter's handler ran 100 times$" \
    "$T/unwind.out" || fail "with JITHERALD=unwind: the handler did not run for every longjmp"
[ "$(invalid unwind)" = 0 ] || { cat "$T/unwind.err"; fail "with JITHERALD=unwind: Wine still reports invalid frames"; }

# The longjmps that do not unwind: the same either way, no handler, no walk.
for mode in builtin noframe; do
    for ch in none unwind; do
        rc=0; run_ex "$mode-$ch" "$ch" "$mode" || rc=$?
        [ "$rc" = 0 ] || { cat "$T/$mode-$ch.err"; fail "$mode, JITHERALD=$ch: exit status $rc"; }
        grep -q '^ok: 100 longjmps through 2 JIT frames without unwinding (handler ran 0 times)$' \
            "$T/$mode-$ch.out" || fail "$mode, JITHERALD=$ch: not 100 longjmps without unwinding"
        [ "$(invalid "$mode-$ch")" = 0 ] || fail "$mode, JITHERALD=$ch: Wine's unwinder ran"
    done
done
echo "PASS: msvcrt's longjmp through JIT frames fails without the unwind channel and works with it; __builtin_longjmp and _setjmp(buf, NULL) do not unwind"
