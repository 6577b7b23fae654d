#!/usr/bin/env bash
# jvmti_unload.sh — the JVMTI agent removes what HotSpot unloads:
#   java -agentpath:libjitherald-jvmti.so=channels=auditlog demo.Hot unload
#   jitherald log FILE code
# demo.Victim, loaded by a class loader of its own, is compiled by C2 and dropped; full GCs
# unload the class and its compiled code (CompiledMethodUnload): the audit log has an add
# of demo.Victim.work with demo/Victim.java:LINE, then its remove.
. "$(dirname "$0")/lib.sh"
java_setup
cd "$T"
P=$B/tests/programs/java
java -XX:+PreserveFramePointer -XX:-TieredCompilation -Xbatch -XX:CompileThreshold=1000 \
    -agentpath:"$JAGENT"=channels=auditlog,dir="$T/d" -Dhot.classes="$P" "${HOT[@]}" \
    demo.Hot unload >run.out 2>&1 || { cat run.out; fail "java demo.Hot unload"; }
grep -qx done run.out || { cat run.out; fail "demo.Hot unload did not finish"; }
"$CLI" log d/hotspot-*.jhlog code >code.out || fail "jitherald log"
grep -i victim code.out
line=$(grep -n '// @work$' "$R/tests/programs/java/demo/Victim.java" | cut -d: -f1)
id=$(awk -v l="demo/Victim.java:$line" '$3 == "add" && $5 == "demo.Victim.work" && $NF == l { print $4; exit }' code.out)
[ -n "$id" ] || fail "no add of demo.Victim.work at demo/Victim.java:$line"
awk -v id="$id" '$3 == "remove" && $4 == id { ok = 1 } END { exit !ok }' code.out ||
    fail "demo.Victim.work (id $id) was never removed"
echo ok
