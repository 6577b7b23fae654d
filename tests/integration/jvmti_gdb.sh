#!/usr/bin/env bash
# jvmti_gdb.sh — the JVMTI agent and gdb, the agent given at start:
#   gdb --args java -XX:+PreserveFramePointer -agentpath:libjitherald-jvmti.so=channels=gdb \
#       demo.Hot gdb        (break jh_java_hit; run; bt)
# demo.Hot.recurse is compiled by C2 (-Xbatch: before it runs again), and once the agent has
# announced it (Hot.java: awaitNamed reads the perf map) it calls the native
# demo.Hot.stop at depth 0, whose C code calls jh_java_hit. The backtrace must name each
# Java frame pkg.Class.method with File.java:LINE: the native wrapper demo.Hot.stop, then
# demo.Hot.recurse at the line of its call to stop, then at the line of its recursive call
# (java_bt_ok, lib.sh), unwinding through the compiled frames by their frame pointer.
# docs/jvmti.md's backtrace is checked against this one.
# Then the same without -XX:+PreserveFramePointer, where C2's code keeps no frame pointer
# and the agent describes no frame: the innermost Java frames are still named.
. "$(dirname "$0")/lib.sh"
java_setup
require_tool gdb gdb
cd "$T"

run_gdb() { # OUT JAVA-OPTIONS...
    local out=$1; shift
    timeout 600 gdb -batch -nx -ex 'handle SIGSEGV SIGILL SIGBUS SIGFPE nostop noprint pass' \
        -ex 'set breakpoint pending on' -ex 'break jh_java_hit' -ex run -ex bt -ex kill \
        --args java "$@" -XX:-TieredCompilation -Xbatch -XX:CompileThreshold=1000 \
        -agentpath:"$JAGENT"=channels=gdb,perfmap "${HOT[@]}" demo.Hot gdb >"$out" 2>&1 || true
    grep -q 'hit Breakpoint 1, jh_java_hit' "$out" || { cat "$out"; fail "gdb never stopped in jh_java_hit"; }
    grep '^#' "$out" >"$out.bt"
    rm -f /tmp/perf-"$(sed -nE 's/.*\[Inferior 1 \(process ([0-9]+)\) killed\]/\1/p' "$out")".map
}

run_gdb fp.out -XX:+PreserveFramePointer
cat fp.out.bt
java_bt_ok fp.out.bt || fail "backtrace with -XX:+PreserveFramePointer"
grep -q 'jitherald' fp.out && { grep jitherald fp.out; fail "the agent or the library complained"; }
# docs/jvmti.md shows this backtrace: its Java frames must be what gdb prints now.
java_frames() { sed -nE 's/^#([0-9]+) +(0x[0-9a-f]+ in )?(demo\.[A-Za-z.]+) \(\)( at (.*:[0-9]+))?$/\1 \3 \5/p'; }
awk '/^## What the tools show/ { w = 1 } w && /^```/ { n++; next } w && n == 1' "$R/docs/jvmti.md" |
    java_frames >doc.frames
[ "$(wc -l <doc.frames)" -ge 3 ] || fail "docs/jvmti.md's backtrace has no Java frames"
java_frames <fp.out.bt | head -n "$(wc -l <doc.frames)" >real.frames
diff doc.frames real.frames || fail "docs/jvmti.md's backtrace (<) differs from gdb's (>): update the doc"

run_gdb nofp.out -XX:-PreserveFramePointer
cat nofp.out.bt
grep -Eq ' in demo\.Hot\.stop \(\)' nofp.out.bt || fail "demo.Hot.stop not named without PreserveFramePointer"
echo "ok"
