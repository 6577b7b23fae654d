#!/usr/bin/env bash
# jvmti_perf.sh — the JVMTI agent and perf, the agent given at start:
#   perf record -k 1 java -agentpath:libjitherald-jvmti.so=channels=jitdump,perfmap demo.Hot spin 3
#   perf report                      (the perf map: names)
#   perf inject --jit; perf report --sort sym,srcline   (the jitdump: names and Hot.java:LINE)
# Most of the program's user-space samples are demo.Hot.spin's, and after inject every one
# of them carries a line of spin's body; `jitherald check` accepts the dump. The audit log
# (channels=...,auditlog; `jitherald log FILE code`) records spin with its file and line.
. "$(dirname "$0")/lib.sh"
java_setup
require_tool perf linux-perf
private_perf_cache
cd "$T"
first=$(grep -n 'static long spin' "$HOTSRC" | cut -d: -f1)
last=$(( $(hot_line spin) + 2 ))

perf record -q -k 1 -F 999 -o perf.data sh -c "$PID_EXEC" "$T/pid" java -XX:+PreserveFramePointer \
    -agentpath:"$JAGENT"=channels=jitdump,perfmap,auditlog,dir="$T/jd" "${HOT[@]}" demo.Hot spin 3 \
    >run.out 2>run.err || { cat run.out run.err; fail "perf record java"; }
at_exit 'rm -f "/tmp/perf-$(cat "$T/pid").map"'
grep -qx done run.out || { cat run.out run.err; fail "demo.Hot did not finish"; }
grep jitherald run.err && fail "the agent or the library complained"

# 1. The perf map: names only.
perf report -i perf.data --stdio --no-children --sort sym >map.out 2>/dev/null
pct=$(share map.out '\[\.\] demo\.Hot\.spin *$' '\[\.\]')
[ "$pct" -ge 50 ] || { head -30 map.out; fail "demo.Hot.spin has $pct% of the user-space samples (perf map)"; }

# 2. The jitdump: names and lines.
dump=$(ls jd/jit-*.dump)
"$CLI" check "$dump" || fail "jitherald check refuses the agent's jitdump"
perf inject --jit -i perf.data -o perf.jit.data 2>inject.err || { cat inject.err; fail "perf inject"; }
perf report -i perf.jit.data --stdio --no-children --sort sym,srcline >srcline.out 2>/dev/null
lines=$(seq -s'|' "$first" "$last")
pct=$(share srcline.out "\\[\\.\\] demo\\.Hot\\.spin +Hot\\.java:($lines) *\$" '\[\.\]')
[ "$pct" -ge 50 ] || { head -30 srcline.out; fail "demo.Hot.spin at Hot.java:$first-$last has $pct% of the user-space samples"; }
only srcline.out "Hot\\.java:($lines) *\$" '\[\.\] demo\.Hot\.spin ' ||
    { head -30 srcline.out; fail "demo.Hot.spin samples outside its lines $first-$last"; }
grep -E '\[\.\] demo\.Hot\.spin ' srcline.out | head -3

# 3. The audit log.
"$CLI" log jd/hotspot-*.jhlog code >log.out || fail "jitherald log"
grep -Eq "add +[0-9]+  demo\.Hot\.spin +0x[0-9a-f]+ +[0-9]+  demo/Hot\.java:($lines)\$" log.out ||
    { grep demo log.out; fail "the audit log has no add of demo.Hot.spin with its line"; }
echo ok
