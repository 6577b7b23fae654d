#!/usr/bin/env bash
# run_erlang.sh — `jitherald run -c elfmap,unwind -- erl +JPperf true ...`: BEAM's perf map
# and jitdump are heard (both: each map line, heard after the dump's LOAD of the same
# function, is that function said again, in the map's spelling "$init:bs2as/1" for the
# dump's "init:bs2as/1"), and Erlang runs as without it. erl_child_setup, the helper BEAM starts, closes
# every descriptor and reuses the numbers: it used to read what the follower had stolen
# from its pipe and exit, which crashed the VM ("Failed to write to erl_child_setup: 32").
. "$(dirname "$0")/lib.sh"
require_tool erl erlang-base
cd "$T"
JITHERALD_DIR=$T/d JITHERALD_RUN_STATS=$T/stats timeout 120 "$CLI" run -c elfmap,unwind -- \
    erl +JPperf true -noshell -eval 'io:format("~p~n", [lists:sum(lists:seq(1, 1000))]), halt().' \
    > out 2> err || { cat out err; fail "erl under jitherald run"; }
grep -qx 500500 out || { cat out err; fail "erl's output"; }
[ ! -e erl_crash.dump ] || fail "erl crashed: $(sed -n 3p erl_crash.dump)"
pid=$(sed -n 's/^pid=\([0-9]*\) exe=[^ ]*beam[^ ]* .*/\1/p' stats)
[ -n "$pid" ] || { cat stats; fail "no stats from beam"; }
at_exit "rm -f /tmp/perf-$pid.map /tmp/jit-$pid.dump"
grep "^pid=$pid " stats
grep -qE "^pid=$pid .* map_lines=[1-9][0-9]* dump_loads=[1-9][0-9]* .* with_lines=[1-9]" stats ||
    fail "beam's map and dump were not both heard, with lines"
# Every map line is a function the jitdump described (BEAM writes both, the map lagging in
# its buffer): none is new code over old. 620 of 16,575 were, when a map line heard after
# its function's slot among the last said was taken (modules lie 64 KiB apart) compared
# the names as they are spelled: the map's description replaced the dump's.
lines=$(sed -n "s/^pid=$pid .* map_lines=\([0-9]*\) .*/\1/p" stats)
grep -qE "^pid=$pid .* replaced=0 same=$lines " stats ||
    fail "map lines taken for new code over the jitdump's (replaced=, same= of map_lines=$lines)"
echo PASS
