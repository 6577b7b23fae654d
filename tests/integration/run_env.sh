#!/usr/bin/env bash
# run_env.sh — what `jitherald run` puts in the command's environment, and nothing else:
#   LD_PRELOAD          the core and the run library first (the core by its path: ld.so
#                       does not search the run library's RUNPATH for it), what the user
#                       had after them
#   JITHERALD_RUN       the channels
#   JITHERALD_RUN_ROOT  its own pid, which the command keeps (exec)
# VALGRIND_OPTS is left as it was: the library hears the VM in the VM's own threads, so it
# has no thread that valgrind must schedule fairly (it used to add --fair-sched=try), and
# valgrind under jitherald run uses the lock it uses alone.
. "$(dirname "$0")/lib.sh"
require_tool valgrind valgrind
cd "$T"
lib=$B/libjitherald.so.0:$B/libjitherald-run.so
show='printf "%s|%s|%s|%s|%s\n" "$LD_PRELOAD" "$JITHERALD_RUN" "$JITHERALD_RUN_ROOT" "$$" "${VALGRIND_OPTS-unset}"'
env -u LD_PRELOAD -u VALGRIND_OPTS "$CLI" run -c gdb -- sh -c "$show" > plain.env
IFS='|' read -r pre ch root self vg < plain.env
[ "$pre|$ch|$vg" = "$lib|gdb|unset" ] && [ "$root" = "$self" ] ||
    fail "environment: $(cat plain.env)"
: > other.so
LD_PRELOAD=$T/other.so VALGRIND_OPTS='-q --fair-sched=no' \
    "$CLI" run -c elfmap -- sh -c "$show" > kept.env 2> /dev/null
IFS='|' read -r pre ch root self vg < kept.env
[ "$pre|$ch|$vg" = "$lib:$T/other.so|elfmap|-q --fair-sched=no" ] ||
    fail "the user's LD_PRELOAD / VALGRIND_OPTS not kept as they were: $(cat kept.env)"

# ld.so looks for no library of ours: found by its soname through the run library's
# RUNPATH ($ORIGIN), the core cost 36 failed openat and stat in glibc's hwcaps directories
# in every process of a run.
if command -v strace > /dev/null; then
    env -u LD_PRELOAD strace -f -e trace=openat,stat,newfstatat,access -o search.txt \
        "$CLI" run -c gdb -- /bin/true 2> /dev/null
    grep -q 'libjitherald-run.so", O_RDONLY' search.txt || fail "strace saw no preload: $(head -3 search.txt)"
    ! grep -E 'libjitherald[^"]*", .*ENOENT' search.txt ||
        fail "ld.so searched for a library of ours (above)"
else
    fail "strace is needed (scripts/install-deps.sh installs it)"
fi

# The descriptor table is grown past the numbers of the descriptors the library keeps
# (base/files.h, jh__kfd_reserve) in the command's constructor, while it has one thread:
# grown later, when the first one is kept and threads share the table, the kernel waits out
# an RCU grace period (5-16 ms of node's start). FDSize: the table's size.
fdsize='s/^FDSize:[[:space:]]*//p'
plainfds=$(sed -n "$fdsize" /proc/self/status)
runfds=$(env -u LD_PRELOAD "$CLI" run -c gdb -- sed -n "$fdsize" /proc/self/status)
echo "descriptor table: $plainfds plain, $runfds under jitherald run"
[ "${runfds:-0}" -gt 1000 ] ||
    fail "the descriptor table under jitherald run holds $runfds, not past 1000 (plain: $plainfds)"

lock() { # VALGRIND ARGS...: the scheduler lock valgrind says it uses
    "$@" 2>&1 | sed -n 's/.*Scheduler: using \(.*\) scheduler lock implementation.*/\1/p' |
        head -1
}
unset VALGRIND_OPTS
base=$(lock valgrind -v --tool=none true)
[ -n "$base" ] || fail "valgrind -v does not name its scheduler lock"
under=$(lock "$CLI" run -c gdb -- valgrind -v --tool=none true)
echo "valgrind alone: $base; under jitherald run: $under"
[ "$under" = "$base" ] || fail "under jitherald run valgrind uses another lock: $under"
echo PASS
