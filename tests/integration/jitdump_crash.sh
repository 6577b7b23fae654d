#!/usr/bin/env bash
# jitdump_crash.sh — the jitdump channel stores its records through a shared mapping of the
# file, not a write per function (src/channels/jitdump.c): what that must keep and what it
# must save.
#   1. kill -9 after 201 functions were announced (minijit --pause-file): perf inject --jit
#      still makes one jitted-<pid>-<index>.so per function, names included, and
#      `jitherald check` accepts the file (no CLOSE; the zeros written ahead "not written
#      yet"): a crash loses nothing that jh_code_add had returned for.
#   2. no system call per function: strace counts the process's writes and fstat calls
#      while 201 functions are announced (a write and an fstat each before: 402 calls).
. "$(dirname "$0")/lib.sh"
require_tool perf linux-perf
require_tool strace strace
private_perf_cache
cd "$T"
many_mini many.mini
export JITHERALD=jitdump JITHERALD_DIR=$T/jd JITHERALD_DEBUG=1

# 1. killed with every function announced
perf record -q -k 1 -o perf.data "$MINIJIT" --pause-file "$T/paused" many.mini >run.out 2>run.err &
rec=$!
kill_at_exit $rec
wait_for_file "$T/paused" 60 || { cat run.err; fail "minijit did not pause"; }
pid=$(cat "$T/paused")
kill -9 "$pid"
wait $rec 2>/dev/null || true     # perf passes on the SIGKILL
dump=jd/jit-$pid.dump
[ -f "$dump" ] || fail "no $dump"
"$CLI" check "$dump" >check.out 2>&1 || { cat check.out; fail "jitherald check refuses the file of a killed process"; }
cat check.out
grep -Eq ' 201 LOAD' check.out || fail "not every function's LOAD is in the file"
grep -q 'no CLOSE' check.out || fail "a killed process wrote CLOSE?"
perf inject --jit -i perf.data -o perf.jit.data 2>inject.err || { cat inject.err; fail "perf inject"; }
n=$(find jd -name "jitted-$pid-*.so" | wc -l)
[ "$n" = 201 ] || fail "perf inject made $n jitted-*.so files, not one per function (201)"
for f in f0 f199 main; do
    grep -l "$f" jd/jitted-"$pid"-*.so >/dev/null || fail "no jitted .so names $f"
done
echo "ok: killed after 201 functions: all 201 in the dump, perf inject made 201 .so files"

# 2. system calls while announcing: a plain run, then one with 201 functions more
calls() { # PROGRAM.mini -> writes and fstats of the whole run
    strace -f -qq -e trace=write,writev,pwrite64,pwritev,newfstatat,fstat -o "$1.strace" \
        "$MINIJIT" "$1" >/dev/null 2>&1 || fail "minijit $1 under strace"
    grep -c . "$1.strace"
}
echo 'fn main() { return 1 }' >one.mini
c1=$(calls one.mini)
cmany=$(calls many.mini)
echo "writes and fstats: $c1 for 1 function, $cmany for 201"
[ $((cmany - c1)) -le 20 ] ||
    { sort "many.mini.strace" | sed 's/(.*//' | uniq -c | sort -rn | head; fail "$((cmany - c1)) more calls for 200 more functions"; }
echo "PASS: a killed process's dump holds every function (perf inject: 201 .so), and announcing 200 functions more costs $((cmany - c1)) writes or fstats, not 400"
