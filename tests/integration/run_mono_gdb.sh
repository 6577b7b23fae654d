#!/usr/bin/env bash
# run_mono_gdb.sh — `jitherald run -c gdb -- gdb --args mono --jitmap gacutil.exe -l`, a
# stop in write(2) as Console.WriteLine prints the first line. Mono keeps a frame pointer
# (55 48 8b ec) in a method only where it must, or everywhere with
# MONO_DEBUG=disable_omit_fp; its other methods and wrappers are frameless (sub rsp, N).
#   1. MONO_DEBUG=disable_omit_fp: gdb's bt names the managed frames from the wrapper
#      down to Mono.Tools.Driver:Main and goes on to mono_main and libc's start;
#   2. as Mono runs by default: bt names the frameless managed-to-native wrapper and ends
#      there, cleanly (tools/lib/prologue.h: no frame proven, unwinding ends);
#   3. control: JITHERALD_RUN_FP=0 (no description from the code's bytes) leaves gdb to its
#      own analysis, which reads garbage past that wrapper.
# Mono's own frames are `??` (its executable is stripped), but in its file: bt_ends_clean
# tells them from garbage.
. "$(dirname "$0")/lib.sh"
require_tool mono mono-runtime
require_tool gdb gdb
GAC=/usr/lib/mono/4.5/gacutil.exe
[ -f "$GAC" ] || skip "$GAC missing (Debian package mono-runtime ships it)"
cd "$T"
GDB=(gdb -q -nx -batch -ex 'handle SIGXCPU SIGPWR SIG35 SIG36 nostop noprint pass'
     -ex 'break write if $rdi == 1' -ex run -ex bt -ex 'info proc mappings' -ex kill
     --args mono --jitmap "$GAC" -l)
frame() { # LOG NAME: the number of the first frame named NAME (a fixed string)
    grep -aF " in $2 (" "$1" | sed -n '1s/^#\([0-9]*\) .*/\1/p'
}
WRAPPER='(wrapper managed-to-native) System.IO.MonoIO:Write'

for n in 1 2; do
    MONO_DEBUG=disable_omit_fp timeout 300 "$CLI" run -c gdb -- "${GDB[@]}" > "fp.$n.gdb" 2>&1 || true
    forget_map "fp.$n.gdb"
    grep -a '^#' "fp.$n.gdb"
    w=$(frame "fp.$n.gdb" "$WRAPPER")
    m=$(frame "fp.$n.gdb" 'Mono.Tools.Driver:Main')
    c=$(frame "fp.$n.gdb" 'System.Console:WriteLine')
    s=$(frame "fp.$n.gdb" 'mono_main')
    [ -n "$w" ] || { cat "fp.$n.gdb"; fail "run $n: the managed-to-native wrapper is not named"; }
    [ -n "$c" ] && [ -n "$m" ] && [ "$w" -lt "$c" ] && [ "$c" -lt "$m" ] ||
        fail "run $n: bt does not go from the wrapper through Console.WriteLine to Driver:Main"
    [ -n "$s" ] && [ "$m" -lt "$s" ] || fail "run $n: bt does not reach mono_main past the managed frames"
    grep -aEq ' in (__libc_start_call_main|__libc_start_main_impl|_start) ' "fp.$n.gdb" ||
        fail "run $n: bt does not reach libc's start"
    bt_ends_clean "fp.$n.gdb"
done
echo "PASS 2 runs, MONO_DEBUG=disable_omit_fp: bt names the managed frames and reaches main"

for n in 1 2; do
    timeout 300 "$CLI" run -c gdb -- "${GDB[@]}" > "flat.$n.gdb" 2>&1 || true
    forget_map "flat.$n.gdb"
    grep -a '^#' "flat.$n.gdb"
    w=$(frame "flat.$n.gdb" "$WRAPPER")
    [ -n "$w" ] || { cat "flat.$n.gdb"; fail "run $n: the managed-to-native wrapper is not named"; }
    bt_ends_clean "flat.$n.gdb"
    ! grep -q "^#$((w + 1)) " "flat.$n.gdb" ||
        fail "run $n: bt goes on past the frameless wrapper"
done
echo "PASS 2 runs, Mono's defaults: bt names the frameless wrapper and ends there, cleanly"

JITHERALD_RUN_FP=0 timeout 300 "$CLI" run -c gdb -- "${GDB[@]}" > control.gdb 2>&1 || true
forget_map control.gdb
grep -a '^#' control.gdb
[ -n "$(frame control.gdb "$WRAPPER")" ] || fail "control: the wrapper is not named"
! (bt_ends_clean control.gdb) >/dev/null ||
    fail "control: without a description gdb's bt ends cleanly too: the check proves nothing"
echo "PASS control: without the description, bt past the wrapper shows garbage"
echo PASS
