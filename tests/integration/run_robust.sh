#!/usr/bin/env bash
# run_robust.sh — what a VM writes can be half there, wrong, huge or rewritten, and
# `jitherald run` must neither crash nor stall it, and must have told the tools by the time
# the write returns (tests/programs/run_vm.c, a VM that knows nothing of jitherald, checks
# its own pages at that moment: a function announced under elfmap has its page mapped from
# an image):
#   partial  lines written in two halves: nothing announced after half a line, every
#            function when its line is complete (also through sh -c exec); with the audit
#            log beside elfmap, and alone (huge), `jitherald log` reads a log the exit
#            closed, with every function
#   junk     2 MiB without a newline, NULs, 0x numbers, size 0, an unmapped address, a
#            writable page: the good lines announced, the rest counted and skipped
#   dump     jitdump records in halves, an unknown record, a LOAD with no NUL, DEBUG_INFO
#            and UNWINDING_INFO (its CFI reaches the unwinder), MOVE, then a record of
#            size 8: what can be read is, the rest is dropped
#   pieces   a jitdump through stdio as V8 writes it, cut at odd places (single bytes,
#            records split anywhere, several in one write): each function named by the
#            write that completes its record and not before, timed or not; the file gets
#            exactly the VM's bytes; and the same in the other byte order, with a header
#            longer than this version's 40 bytes
#   fork     a child's own map; the parent's map truncated and written again
#   none     no map at all: nothing of jitherald's is opened
#   closefds a helper that closes every descriptor and reuses the numbers (Erlang's
#            erl_child_setup did, and then read from its own pipe what the old follower
#            thread had taken)
#   huge     100,000 lines in one write: all announced when it returns
#   race     a thread flipping code pages RW/RX and writing them while their lines are
#            announced again and again: no write lost, no fault
. "$(dirname "$0")/lib.sh"
V=$(program run_vm)
cd "$T"
export JITHERALD_DIR=$T/d JITHERALD_RUN_STATS=$T/stats
run() { # MODE [N]
    : > stats
    timeout 120 "$CLI" run -c "${CH:-elfmap}" -- "$V" "$@" > "$1.out" 2> "$1.err" ||
        { cat "$1.out" "$1.err"; fail "run_vm $*"; }
    cat "$1.out"
}
last_pid() { tail -1 stats | sed -n 's/^pid=\([0-9]*\) .*/\1/p'; }
drop_map() { rm -f "/tmp/perf-$(last_pid).map"; }  # the last run's map (huge leaves it)
stat() { # FIELD: its value on the last stats line
    tail -1 stats | tr ' ' '\n' | sed -n "s/^$1=//p"
}
run partial 16
grep -q 'partial: 16 of 16 swapped when their line was written; 0 after half' partial.out ||
    fail "partial: $(cat partial.out)"
# through a wrapper that execs the VM (a shell script, rakudo -> moar): same pid, the
# library loaded again in the new image
: > stats
"$CLI" run -c elfmap -- sh -c 'exec "$0" partial 4' "$V" > wrapped.out 2>&1 ||
    { cat wrapped.out; fail "through sh -c exec"; }
cat wrapped.out
# The audit log shares a context with gdb and unwind (adapters/preload/preload.c): it alone
# is closed at exit, so the log says the process ended rather than that it was cut, while
# they stay open. Beside elfmap, with every channel, and alone (huge: it checks nothing
# itself).
check_log() { # N: the last run's log holds N functions and was closed
    local pid
    pid=$(last_pid)
    "$CLI" log "$T/d/run-$pid.jhlog" > log.info || fail "jitherald log: $(cat log.info)"
    grep -q " $1 functions ($1 live at the end)" log.info && grep -q 'closed cleanly' log.info ||
        { cat log.info; fail "the audit log of $pid"; }
    "$CLI" log "$T/d/run-$pid.jhlog" code > log.code
    drop_map
}
CH=elfmap,auditlog run partial 8
check_log 8
grep -q ' add .* fn_7 ' log.code || fail "the audit log has no fn_7: $(cat log.code)"
CH=all run partial 8
check_log 8
CH=auditlog run huge 1000
check_log 1000
run junk
[ "$(stat malformed)" -ge 4 ] || fail "junk: $(stat malformed) malformed lines counted"
# the 3 good lines and the writable page's (named for every channel, never swapped)
[ "$(stat announced)" = 4 ] || fail "junk: $(stat announced) announced, not 4"
[ "$(stat unreadable)" = 1 ] || fail "junk: the unmapped address was not counted"
grep -q 'pages are writable' junk.err || fail "junk: the writable page was not reported"
# with the unwind channel and no frame described from the bytes: the process's unwinder has an FDE
# exactly for the code whose UNWINDING_INFO came with it
CH=elfmap,unwind JITHERALD_RUN_FP=0 run dump
[ "$(stat moved)" = 1 ] && [ "$(stat with_lines)" = 1 ] && [ "$(stat with_cfi)" = 1 ] ||
    fail "dump: $(tail -1 stats)"
grep -q 'UNWINDING_INFO: yes; for the code without: no' dump.out || fail "dump: CFI"
grep -q 'has size 8: the rest of the file is not read' dump.err || fail "dump: no report"
# untimed, the usual way (a piece of a record is only kept, stream.c); timed, every piece
# goes the long way
for timed in no yes; do
    if [ $timed = yes ]; then run pieces 40; else
        env -u JITHERALD_RUN_STATS timeout 120 "$CLI" run -c elfmap -- "$V" pieces 40 > pieces.out 2> pieces.err ||
            { cat pieces.out pieces.err; fail "run_vm pieces (untimed)"; }
        cat pieces.out
    fi
    grep -q 'pieces: 40 functions .* completed them: 40; early: 0; late: 0; the file holds exactly' pieces.out ||
        fail "pieces (timed: $timed): $(cat pieces.out)"
done
# the same from a VM of the other byte order, whose header is longer than this version's
run pieces-other 40
grep -q 'pieces (other byte order): 40 functions .* completed them: 40; early: 0; late: 0; the file holds exactly' pieces-other.out ||
    fail "pieces in the other byte order: $(cat pieces-other.out pieces-other.err)"
run fork
[ "$(stat rewrites)" -ge 1 ] || fail "fork: the rewrite was not noticed"
# HotSpot's `jcmd Compiler.perfmap` again: a rewrite, not an append (issue 24, defect 2)
run jcmd
[ "$(stat rewrites)" -ge 1 ] || fail "jcmd: the rewrite was not noticed"
grep -q 'jcmd: 4 of 4 named' jcmd.out || fail "jcmd: $(cat jcmd.out)"
CH=all JITHERALD_DIR=$T/none run none
[ -e "$T/none" ] && fail "none: files were created: $(ls "$T/none")"
[ "$(stat announced)" = 0 ] || fail "none: $(tail -1 stats)"
# said once, at the end of the run, naming the VMs' options
[ "$(grep -c 'no process of this run wrote a perf map or a jitdump' none.err)" = 1 ] &&
    grep -q 'node --perf-basic-prof' none.err || fail "none: not said once: $(cat none.err)"
# not said when a process of the run did write one (here a child of the root, a shell)
"$CLI" run -c gdb -- sh -c '"$0" partial 2; :' "$V" > child.out 2> child.err ||
    fail "a map written by a child: $(cat child.err)"
grep -q 'no process of this run' child.err && fail "said though a child wrote a map"
run closefds
run huge 100000
drop_map
[ "$(stat announced)" = 100000 ] || fail "huge: $(stat announced) of 100000 announced"
grep -qE 'huge: .* ([0-9]+) of \1 pages swapped then' huge.out || fail "huge: not all named"
run race 1000
echo PASS
