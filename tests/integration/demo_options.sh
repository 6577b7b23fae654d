#!/usr/bin/env bash
# demo_options.sh — the minijit program's options behave as other tests rely on:
# --pause-file (pid written, code announced before the wait, main runs only after the file
# is deleted), --remove --recompile (same addresses announced twice, perf map shows both),
# --repeat, --threads, exit codes and file:line:col messages.
set -eu
: "${JH_BUILD:?run through tests/run.sh}" "${JH_ROOT:?}"
MJ=$JH_BUILD/examples/minijit
EX=$JH_ROOT/examples/minijit
[ -x "$MJ" ] || { echo "FAIL: $MJ not built"; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/jh-demo-options.XXXXXX")
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; rm -f "/tmp/perf-$p.map"; done
    rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

# --pause-file: the map is complete while we wait, main has not run yet.
JITHERALD=perfmap "$MJ" --pause-file "$tmp/pause" "$EX/calls.mini" >"$tmp/pause.out" 2>&1 &
bg=$!
pids+=("$bg")
for _ in $(seq 500); do [ -s "$tmp/pause" ] && break; sleep 0.02; done
[ -s "$tmp/pause" ] || fail "no pause file written"
[ "$(cat "$tmp/pause")" = "$bg" ] || fail "pause file holds $(cat "$tmp/pause"), not pid $bg"
for f in c b a main; do
    grep -Eq "^[0-9a-f]+ [0-9a-f]+ $f\$" "/tmp/perf-$bg.map" || fail "$f not announced before the pause"
done
grep -Eq "^7f[0-9a-f]+-[0-9a-f]+ r-xp 00000000 00:00 0 *$" "/proc/$bg/maps" ||
    fail "no anonymous r-x code mapping while paused"
sleep 0.2
[ ! -s "$tmp/pause.out" ] || fail "main ran before the pause file was deleted: $(cat "$tmp/pause.out")"
rm "$tmp/pause"
wait "$bg" || fail "minijit --pause-file exited $?"
[ "$(cat "$tmp/pause.out")" = 225 ] || fail "calls.mini printed '$(cat "$tmp/pause.out")'"

# --remove --recompile: the second compile reuses the first one's addresses.
JITHERALD=perfmap "$MJ" --remove --recompile --print-result "$EX/calls.mini" >"$tmp/re.out" &
bg=$!
pids+=("$bg")
wait "$bg" || fail "--remove --recompile exited $?"
[ "$(grep -c '^225$' "$tmp/re.out")" = 2 ] || fail "main did not run twice: $(cat "$tmp/re.out")"
map=/tmp/perf-$bg.map
[ "$(wc -l <"$map")" = 8 ] || fail "expected 8 map lines (4 functions twice): $(cat "$map")"
[ "$(head -4 "$map")" = "$(tail -4 "$map")" ] || fail "recompiled code moved: $(cat "$map")"

# --repeat, and arguments to main.
out=$("$MJ" --repeat 3 "$EX/fib.mini" 10)
[ "$out" = "$(printf '55\n55\n55')" ] || fail "--repeat 3 printed '$out'"

# --threads: one result per thread, all equal; the code of different threads shares pages.
JITHERALD=perfmap "$MJ" --threads 3 "$EX/loops.mini" >"$tmp/thr.out" &
bg=$!
pids+=("$bg")
wait "$bg" || fail "--threads 3 exited $?"
[ "$(grep -c '^thread [0-2]: main returned 0$' "$tmp/thr.out")" = 3 ] || fail "$(cat "$tmp/thr.out")"
[ "$(grep -c '^76127$' "$tmp/thr.out")" = 3 ] || fail "$(cat "$tmp/thr.out")"
pages=$(awk '{ print substr($1, 1, length($1) - 3) }' "/tmp/perf-$bg.map" | sort -u | wc -l)
[ "$(wc -l <"/tmp/perf-$bg.map")" = 15 ] || fail "expected 15 functions: $(cat "/tmp/perf-$bg.map")"
[ "$pages" -lt 15 ] || fail "every function on its own page: the arena does not pack code"

# Errors: file:line:col and exit 1; usage errors exit 2.
printf 'fn main() {\n    var x = 1\n    return y\n}\n' >"$tmp/bad.mini"
set +e
"$MJ" "$tmp/bad.mini" 2>"$tmp/err"; rc=$?
"$MJ" --threads 0 "$EX/fib.mini" 2>/dev/null; rc2=$?
"$MJ" 2>/dev/null; rc3=$?
"$MJ" "$tmp/missing.mini" 2>"$tmp/err4"; rc4=$?
"$MJ" "$EX/calls.mini" 1 2>"$tmp/err5"; rc5=$?
set -e
[ $rc = 1 ] || fail "parse error exited $rc"
grep -q "^$tmp/bad.mini:3:12: error: 'y' is not declared" "$tmp/err" || fail "message: $(cat "$tmp/err")"
[ $rc2 = 2 ] && [ $rc3 = 2 ] || fail "usage errors exited $rc2 / $rc3, not 2"
[ $rc4 = 1 ] && grep -q "missing.mini: No such file" "$tmp/err4" || fail "missing file: $rc4 $(cat "$tmp/err4")"
[ $rc5 = 1 ] && grep -q "main takes 0 arguments, 1 given" "$tmp/err5" || fail "extra argument: $(cat "$tmp/err5")"
"$MJ" --help | grep -q -- '--pause-file' || fail "--help does not list --pause-file"
echo "PASS: --pause-file, --remove --recompile, --repeat, --threads, errors"
