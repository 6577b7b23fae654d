#!/usr/bin/env bash
# jvmti_late.sh — the JVMTI agent loaded into a running JVM, after the code it must name was
# compiled:
#   java demo.Hot late READY &          (no agent; recurse and spin compiled by C2)
#   jcmd PID JVMTI.agent_load libjitherald-jvmti.so channels:gdb,perfmap,jitdump,dir:DIR
#   gdb -p PID      (break jh_java_hit; continue; bt)
#   perf record -k 1 -p PID; perf inject --jit; perf report --sort sym,srcline
# GenerateEvents replays what was compiled before: gdb names demo.Hot.stop and
# demo.Hot.recurse with demo/Hot.java:LINE (java_bt_ok, lib.sh), the perf map names them,
# and perf names demo.Hot.spin with a line of its body. The option spelled with '=' and
# quoted, as jcmd needs it, is checked by a second load being refused as "already loaded".
. "$(dirname "$0")/lib.sh"
java_setup
require_tool jcmd openjdk-17-jdk-headless
require_tool gdb gdb
require_tool perf linux-perf
private_perf_cache
cd "$T"

java -XX:+PreserveFramePointer -XX:-TieredCompilation -Xbatch -XX:CompileThreshold=1000 \
    "${HOT[@]}" demo.Hot late "$T/ready" >java.out 2>&1 &
pid=$!
at_exit "kill $pid 2>/dev/null; wait_gone $pid 30 || kill -9 $pid 2>/dev/null; rm -f /tmp/perf-$pid.map"
wait_for_file ready 300 || { cat java.out; fail "demo.Hot never got ready"; }
! wrote_perf_map "$pid" || fail "a perf map exists before the agent is loaded"

timeout 300 jcmd "$pid" JVMTI.agent_load "$JAGENT" "channels:gdb,perfmap,jitdump,dir:$T/jd" \
    >load.out 2>&1 || { cat load.out java.out; fail "jcmd JVMTI.agent_load"; }
grep -q 'return code: 0' load.out || { cat load.out java.out; fail "the agent refused to load"; }
timeout 300 jcmd "$pid" JVMTI.agent_load "$JAGENT" '"channels=perfmap"' >load2.out 2>&1 || true
grep -q 'return code: 0' load2.out || { cat load2.out; fail "a second, quoted load failed"; }

# The perf map names what was compiled before the agent came.
map=/tmp/perf-$pid.map
grep -Eq ' demo\.Hot\.recurse$' "$map" || { cat "$map"; fail "the perf map does not name demo.Hot.recurse"; }
grep -Eq ' demo\.Hot\.spin$' "$map" || fail "the perf map does not name demo.Hot.spin"
grep -Eq ' Interpreter$' "$map" || fail "the perf map does not name the interpreter (a stub)"

timeout 600 gdb -batch -nx -p "$pid" -ex 'handle SIGSEGV SIGILL SIGBUS SIGFPE nostop noprint pass' \
    -ex 'break jh_java_hit' -ex continue -ex bt -ex detach >gdb.out 2>&1 || true
grep -q 'hit Breakpoint 1, jh_java_hit' gdb.out || { cat gdb.out; fail "gdb never stopped in jh_java_hit"; }
grep '^#' gdb.out >gdb.bt
cat gdb.bt
java_bt_ok gdb.bt || fail "backtrace after a late load"
kill -0 "$pid" || fail "the JVM did not survive gdb's detach"

first=$(grep -n 'static long spin' "$HOTSRC" | cut -d: -f1)
lines=$(seq -s'|' "$first" $(( $(hot_line spin) + 2 )))
perf record -q -k 1 -F 999 -p "$pid" -o perf.data -- sleep 3 2>perf.err || { cat perf.err; fail "perf record -p"; }
perf inject --jit -i perf.data -o perf.jit.data 2>inject.err || { cat inject.err; fail "perf inject"; }
perf report -i perf.jit.data --stdio --no-children --sort sym,srcline >srcline.out 2>/dev/null
pct=$(share srcline.out "\\[\\.\\] demo\\.Hot\\.spin +Hot\\.java:($lines) *\$" '\[\.\]')
[ "$pct" -ge 50 ] || { head -30 srcline.out; fail "demo.Hot.spin at Hot.java:$first-... has $pct% of the samples"; }
grep -q 'jitherald-jvmti: already loaded' java.out || { cat java.out; fail "the second load did not say it was ignored"; }
grep -v 'already loaded' java.out | grep jitherald && fail "the agent or the library complained"
echo ok
