#!/usr/bin/env bash
# jvmti_options.sh — the JVMTI agent's options (docs/jvmti.md, "Options"): a wrong channel
# or option stops the JVM at start with a message naming it; `channels:none` (':' for '=')
# announces nothing; $JITHERALD wins over channels=, as for every jitherald client.
. "$(dirname "$0")/lib.sh"
java_setup
cd "$T"
run() { # OUT AGENT-OPTIONS [env...]
    local out=$1 opts=$2; shift 2
    env "$@" sh -c "$PID_EXEC" "$T/pid" java -agentpath:"$JAGENT=$opts" "${HOT[@]}" demo.Hot spin 0.2 \
        >"$out" 2>&1
    local rc=$?
    at_exit "rm -f /tmp/perf-$(cat "$T/pid").map"
    return $rc
}
run bad_channel.out "channels=perfmap,gbd" && fail "a JVM started with channel 'gbd'"
grep -q "unknown channel 'gbd'" bad_channel.out || { cat bad_channel.out; fail "no message naming 'gbd'"; }
run bad_key.out "channel=gdb" && fail "a JVM started with option 'channel=gdb'"
grep -q "unknown option 'channel=gdb'" bad_key.out || { cat bad_key.out; fail "no message naming 'channel=gdb'"; }
run stray.out "gdb" && fail "a JVM started with a channel outside channels="
grep -q "'gdb' follows no channels=" stray.out || { cat stray.out; fail "no message for a stray word"; }

run none.out "channels:none" || { cat none.out; fail "channels:none"; }
grep -qx done none.out || fail "demo.Hot did not finish with channels:none"
! wrote_perf_map "$(cat pid)" || fail "channels:none wrote a perf map"

run env.out "channels=gdb" JITHERALD=perfmap || { cat env.out; fail "JITHERALD=perfmap"; }
grep -q ' demo\.Hot\.spin$' "/tmp/perf-$(cat pid).map" || fail "JITHERALD=perfmap did not win over channels=gdb"
echo ok
