#!/usr/bin/env bash
# run_java_gdb.sh — `jitherald run -c gdb -- gdb --args java -XX:+PreserveFramePointer ...`
# (tests/run/JitStop.java): compiled recursive code, HotSpot's perf map written on `jcmd
# PID Compiler.perfmap` (heard as it is written), then a stop in JVM_Sleep called from the
# compiled code. gdb's bt names the native wrapper HotSpot made for Thread.sleep and the
# compiled JitStop.depth frames, whose prologues jitherald recognises (55 48 8b ec after
# the inline-cache check and the stack bang: tools/lib/prologue.h), and ends cleanly where
# no frame can be derived (HotSpot's interpreter, which has no prologue at its start),
# instead of reading garbage as return addresses. Control: JITHERALD_RUN_FP=0 (no
# description from the code's bytes) leaves gdb to its own analysis, which finds no
# prologue at the wrapper's first byte and reads garbage right after it (before issue 24's
# fix, after the interpreter). -XX:-BackgroundCompilation: every compilation the warm-up starts is
# installed before the map is asked for, loaded machine or not.
. "$(dirname "$0")/lib.sh"
require_tool java openjdk-17-jre-headless
require_tool javac openjdk-17-jdk-headless
require_tool jcmd openjdk-17-jdk-headless
require_tool gdb gdb
cd "$T"
cp "$R/tests/run/JitStop.java" .
javac JitStop.java || fail "javac"
GDB=(gdb -q -nx -batch -ex 'handle SIGSEGV SIGQUIT SIGUSR2 nostop noprint pass'
     -ex 'set breakpoint pending on' -ex 'break JVM_Sleep if $rdx == 7' -ex run -ex bt
     -ex 'info proc mappings' -ex kill
     --args java -XX:+PreserveFramePointer -XX:-BackgroundCompilation -cp . JitStop)
for n in 1 2 3; do
    timeout 300 "$CLI" run -c gdb -- "${GDB[@]}" > "bt.$n.gdb" 2>&1 || true
    forget_map "bt.$n.gdb"
    grep -a '^#' "bt.$n.gdb"
    grep -aEq '^#0 +0x[0-9a-f]+ in JVM_Sleep \(\)' "bt.$n.gdb" ||
        { cat "bt.$n.gdb"; fail "run $n: no stop in JVM_Sleep"; }
    grep -aEq '^#1 +0x[0-9a-f]+ in void java\.lang\.Thread\.sleep\(long\) \(\)$' "bt.$n.gdb" ||
        fail "run $n: JVM_Sleep's caller is not named as Thread.sleep's native wrapper"
    grep -aEq '^#2 +0x[0-9a-f]+ in int JitStop\.depth\(int, long\) \(\)$' "bt.$n.gdb" ||
        fail "run $n: the wrapper's caller is not the compiled JitStop.depth"
    [ "$(grep -acE '^#[0-9]+ +0x[0-9a-f]+ in int JitStop\.depth\(int, long\) \(\)$' "bt.$n.gdb")" -ge 2 ] ||
        fail "run $n: bt did not go from one compiled depth() frame to the next"
    bt_ends_clean "bt.$n.gdb"
done
echo "PASS 3 runs: bt names Thread.sleep's wrapper and the compiled depth() frames, and ends cleanly"

JITHERALD_RUN_FP=0 timeout 300 "$CLI" run -c gdb -- "${GDB[@]}" > bt.control.gdb 2>&1 || true
forget_map bt.control.gdb
grep -a '^#' bt.control.gdb
grep -aEq '^#1 +0x[0-9a-f]+ in void java\.lang\.Thread\.sleep\(long\) \(\)$' bt.control.gdb ||
    fail "control: JVM_Sleep's caller is not named"
! (bt_ends_clean bt.control.gdb) >/dev/null ||
    fail "control: without a description gdb's bt ends cleanly too: the check proves nothing"
echo "PASS control: without the description, bt past the JIT frames shows garbage"
echo PASS
