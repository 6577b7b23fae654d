#!/usr/bin/env bash
# run_env.sh — what `jitherald run` puts in the command's environment, and that valgrind
# takes it as meant:
#   LD_PRELOAD     the run library first, what the user had after it
#   JITHERALD_RUN  the channels
#   VALGRIND_OPTS  --fair-sched=try first, the user's after it: valgrind then uses its fair
#                  (ticket) lock between threads, without which the follower thread waits
#                  behind the VM's busy threads (run_rakudo_callgrind.sh says what that
#                  costs); an option the user gives, in VALGRIND_OPTS or on valgrind's
#                  command line, still wins
. "$(dirname "$0")/lib.sh"
require_tool valgrind valgrind
cd "$T"
lib=$B/libjitherald-run.so
show='printf "%s|%s|%s\n" "$LD_PRELOAD" "$JITHERALD_RUN" "$VALGRIND_OPTS"'
env -u LD_PRELOAD -u VALGRIND_OPTS "$CLI" run -c gdb -- sh -c "$show" > plain.env
[ "$(cat plain.env)" = "$lib|gdb|--fair-sched=try" ] || fail "environment: $(cat plain.env)"
: > other.so
LD_PRELOAD=$T/other.so VALGRIND_OPTS='-q --fair-sched=no' \
    "$CLI" run -c elfmap -- sh -c "$show" > kept.env 2> /dev/null
[ "$(cat kept.env)" = "$lib:$T/other.so|elfmap|--fair-sched=try -q --fair-sched=no" ] ||
    fail "the user's LD_PRELOAD / VALGRIND_OPTS not kept after ours: $(cat kept.env)"

lock() { # VALGRIND ARGS...: the scheduler lock valgrind says it uses
    "$@" 2>&1 | sed -n 's/.*Scheduler: using \(.*\) scheduler lock implementation.*/\1/p' |
        head -1
}
unset VALGRIND_OPTS
base=$(lock valgrind -v --tool=none true)
[ -n "$base" ] || fail "valgrind -v does not name its scheduler lock"
echo "valgrind alone: $base"
under=$(lock "$CLI" run -c gdb -- valgrind -v --tool=none true)
[ "$under" = "ticket lock" ] || fail "under jitherald run valgrind uses the lock: $under"
mine=$(lock "$CLI" run -c gdb -- valgrind -v --fair-sched=no --tool=none true)
[ "$mine" = "$base" ] || fail "valgrind --fair-sched=no under jitherald run: $mine"
echo "under jitherald run: $under; with --fair-sched=no: $mine"
echo PASS
