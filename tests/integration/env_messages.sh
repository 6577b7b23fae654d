#!/usr/bin/env bash
# env_messages.sh — what a newcomer sees on stderr when the environment is wrong, without
# JITHERALD_DEBUG: a misspelt channel name is one line naming it and the known ones; a
# channel asked for by JITHERALD that cannot start is one line worded about the file it
# could not make ("No such file or directory", never the API's "no such code registered");
# a correct setting, or none, prints nothing. The JIT runs either way.
. "$(dirname "$0")/lib.sh"
run() { # JITHERALD JITHERALD_DIR -> $T/out, $T/err
    local rc=0
    env -u JITHERALD_DEBUG JITHERALD="$1" JITHERALD_DIR="$2" "$MINIJIT" "$MINI/calls.mini" \
        >"$T/out" 2>"$T/err" || rc=$?
    [ $rc = 0 ] && [ "$(cat "$T/out")" = 225 ] || fail "JITHERALD=$1: exit $rc, $(cat "$T/out" "$T/err")"
}
lines() { wc -l < "$T/err"; }

run prefmap "$T/d"
[ "$(lines)" = 1 ] && grep -q "unknown channel 'prefmap' ignored (known: perfmap," "$T/err" ||
    fail "a misspelt channel: $(cat "$T/err")"

run jitdump "$T/nonexistent/a/b"
grep -q "jitdump: cannot start: No such file or directory" "$T/err" ||
    fail "a channel that cannot start is not named with its reason: $(cat "$T/err")"
grep -q "no such code registered" "$T/err" && fail "a file error worded as an API error: $(cat "$T/err")"
grep -q "directory $T/nonexistent/a/b: No such file or directory" "$T/err" ||
    fail "the directory is not named: $(cat "$T/err")"

run jitdump "$T/d"
[ "$(lines)" = 0 ] || fail "a working channel is not silent: $(cat "$T/err")"
env -u JITHERALD -u JITHERALD_DEBUG "$MINIJIT" "$MINI/calls.mini" 2>"$T/err" >/dev/null
[ "$(lines)" = 0 ] || fail "no JITHERALD, yet: $(cat "$T/err")"
echo PASS
