#!/usr/bin/env bash
# demo_options.sh — the minijit program's options behave as other tests rely on:
# --pause-file (pid written, code announced before the wait, main runs only after the file
# is deleted), --remove --recompile (same addresses announced twice, perf map shows both),
# --repeat, --threads, exit codes and file:line:col messages.
. "$(dirname "$0")/lib.sh"
started() { kill_at_exit "$1"; at_exit "rm -f /tmp/perf-$1.map"; }

# --pause-file: the map is complete while we wait, main has not run yet.
JITHERALD=perfmap "$MINIJIT" --pause-file "$T/pause" "$MINI/calls.mini" >"$T/pause.out" 2>&1 &
bg=$!
started "$bg"
wait_for_file "$T/pause"
[ "$(cat "$T/pause")" = "$bg" ] || fail "pause file holds $(cat "$T/pause"), not pid $bg"
# names shorter than 3 bytes are padded with spaces (perf skips shorter ones)
for f in c b a main; do
    grep -Eq "^[0-9a-f]+ [0-9a-f]+ $f *\$" "/tmp/perf-$bg.map" || fail "$f not announced before the pause"
done
# (the mapping that holds main's code, wherever ASLR put it: not always at 0x7f...)
cp "/proc/$bg/maps" "$T/maps"
at=$(awk '$3 == "main" { print $1 }' "/tmp/perf-$bg.map")
inanon=
while read -r range perm off dev inode path; do
    [ "$perm $off $dev $inode" = "r-xp 00000000 00:00 0" ] && [ -z "$path" ] &&
        [ $((0x${range%-*})) -le $((0x$at)) ] && [ $((0x$at)) -lt $((0x${range#*-})) ] && inanon=$range
done <"$T/maps"
[ -n "$at" ] && [ -n "$inanon" ] ||
    { cat "$T/maps"; fail "main (0x$at) is in no anonymous r-x mapping while paused"; }
sleep 0.2
[ ! -s "$T/pause.out" ] || fail "main ran before the pause file was deleted: $(cat "$T/pause.out")"
rm "$T/pause"
wait "$bg" || fail "minijit --pause-file exited $?"
[ "$(cat "$T/pause.out")" = 225 ] || fail "calls.mini printed '$(cat "$T/pause.out")'"

# --remove --recompile: the second compile reuses the first one's addresses.
JITHERALD=perfmap "$MINIJIT" --remove --recompile --print-result "$MINI/calls.mini" >"$T/re.out" &
bg=$!
started "$bg"
wait "$bg" || fail "--remove --recompile exited $?"
[ "$(grep -c '^225$' "$T/re.out")" = 2 ] || fail "main did not run twice: $(cat "$T/re.out")"
map=/tmp/perf-$bg.map
[ "$(wc -l <"$map")" = 8 ] || fail "expected 8 map lines (4 functions twice): $(cat "$map")"
[ "$(head -4 "$map")" = "$(tail -4 "$map")" ] || fail "recompiled code moved: $(cat "$map")"

# --repeat, and arguments to main.
out=$("$MINIJIT" --repeat 3 "$MINI/fib.mini" 10)
[ "$out" = "$(printf '55\n55\n55')" ] || fail "--repeat 3 printed '$out'"

# --threads: one result per thread, all equal; the code of different threads shares pages.
JITHERALD=perfmap "$MINIJIT" --threads 3 "$MINI/loops.mini" >"$T/thr.out" &
bg=$!
started "$bg"
wait "$bg" || fail "--threads 3 exited $?"
[ "$(grep -c '^thread [0-2]: main returned 0$' "$T/thr.out")" = 3 ] || fail "$(cat "$T/thr.out")"
[ "$(grep -c '^76127$' "$T/thr.out")" = 3 ] || fail "$(cat "$T/thr.out")"
pages=$(awk '{ print substr($1, 1, length($1) - 3) }' "/tmp/perf-$bg.map" | sort -u | wc -l)
[ "$(wc -l <"/tmp/perf-$bg.map")" = 15 ] || fail "expected 15 functions: $(cat "/tmp/perf-$bg.map")"
[ "$pages" -lt 15 ] || fail "every function on its own page: the arena does not pack code"

# Errors: file:line:col and exit 1; usage errors exit 2.
printf 'fn main() {\n    var x = 1\n    return y\n}\n' >"$T/bad.mini"
set +e
"$MINIJIT" "$T/bad.mini" 2>"$T/err"; rc=$?
"$MINIJIT" --threads 0 "$MINI/fib.mini" 2>/dev/null; rc2=$?
"$MINIJIT" 2>/dev/null; rc3=$?
"$MINIJIT" "$T/missing.mini" 2>"$T/err4"; rc4=$?
"$MINIJIT" "$MINI/calls.mini" 1 2>"$T/err5"; rc5=$?
set -e
[ $rc = 1 ] || fail "parse error exited $rc"
grep -q "^$T/bad.mini:3:12: error: 'y' is not declared" "$T/err" || fail "message: $(cat "$T/err")"
[ $rc2 = 2 ] && [ $rc3 = 2 ] || fail "usage errors exited $rc2 / $rc3, not 2"
[ $rc4 = 1 ] && grep -q "missing.mini: No such file" "$T/err4" || fail "missing file: $rc4 $(cat "$T/err4")"
[ $rc5 = 1 ] && grep -q "main takes 0 arguments, 1 given" "$T/err5" || fail "extra argument: $(cat "$T/err5")"
"$MINIJIT" --help | grep -q -- '--pause-file' || fail "--help does not list --pause-file"
echo "PASS: --pause-file, --remove --recompile, --repeat, --threads, errors"
