#!/usr/bin/env bash
# auditlog_profile.sh — `jitherald log FILE profile perf.data` names each sample by the code
# that was at its address at the sample's time, where perf with the perf map cannot.
#
# minijit runs profile/phase1.mini (spin_a spins n rounds), removes and frees its code, and
# compiles profile/phase2.mini into the same addresses (--recompile-from), whose spin_b is the
# same loop spinning 3n rounds. The perf map then holds spin_a and spin_b for one range and
# perf shows one name for all its samples; the log knows when each was there.
# Asserted, each against an independent count:
#  1. the truth from perf's own samples (perf script), split at the time spin_a was removed
#     (the log's CLOCK_MONOTONIC start, `info`, plus its remove record, `code`): the profile's
#     spin_a and spin_b self counts are exactly those, and spin_b has 1.5 to 5 times spin_a's
#     (3 by construction: each sample counts CPU time, so a loaded machine keeps the ratio;
#     measured here 2.5 to 3.3, asserted 1.5 to 5);
#  2. `perf report` with the perf map gives every one of those samples to one name, and the
#     profile's "the perf map would name N differently" is exactly the other name's count;
#  3. total: the JIT main is on the call chain of every sample of its callees;
#  4. callgrind.out (no times): the reused address's cost shown under both names, counted;
#  5. a file that is not a perf.data, one of another process, a pipe-mode one: exit 1, said;
#     one recorded without -k 1: named anyway, with a warning.
. "$(dirname "$0")/lib.sh"
require_tool perf linux-perf
require_tool valgrind valgrind
private_perf_cache
cd "$T"
. "$R/tests/integration/profile/known.sh"
known_record 100000000

"$CLI" log "$log" profile p.data >prof.out 2>prof.err || { cat prof.err; fail "profile exited $?"; }
cat prof.out
self() { awk -v f="$1" '$5 == f { print $2; exit }' prof.out; }
a=$(self spin_a) b=$(self spin_b)
[ -n "$a" ] && [ -n "$b" ] || fail "no spin_a or spin_b row"

# 1. The truth, from perf's samples and the log's times.
read -r ta tb < <(known_truth)
echo "truth: spin_a $ta, spin_b $tb; profile: spin_a $a, spin_b $b"
[ "$ta" = "$a" ] && [ "$tb" = "$b" ] || fail "the profile does not match the samples' times"
[ "$a" -ge 100 ] || fail "only $a samples of spin_a: too few to say anything"
awk -v a="$a" -v b="$b" 'BEGIN { exit !(b >= 1.5 * a && b <= 5 * a) }' ||
    fail "spin_b has $b samples for spin_a's $a: not about 3 times"
[ "$(sed -n 3p prof.out | awk '{ print $5 }')" = spin_b ] || fail "spin_b is not the hottest row"

# 2. perf with the perf map: one name for both, which the profile counts as misnamed.
known_perf_counts
[ $((pa + pb)) = $((a + b)) ] || fail "perf report has $pa + $pb samples in the range, the profile $a + $b"
[ "$pa" = 0 ] || [ "$pb" = 0 ] || fail "perf named both spin_a ($pa) and spin_b ($pb): no name was wrong"
wrong=$(sed -n 's/^JIT code: [0-9]* samples; the perf map would name \([0-9]*\) of them.*/\1/p' prof.out)
want=$([ "$pa" = 0 ] && echo "$a" || echo "$b")
[ "$wrong" = "$want" ] || fail "the profile says the perf map misnames $wrong samples; perf report misnamed $want"
shown=$([ "$pa" = 0 ] && echo spin_b || echo spin_a)
grep -q "(the perf map says $shown for all $want)" prof.out || fail "no per-row note of perf's name"

# 3. Call chains: main (of either program) under nearly every sample of the JIT.
main_total=$(awk '$5 == "main" { print $4 }' prof.out)
[ "${main_total:-0}" -ge $((a + b)) ] || fail "main's total ${main_total:-none} is below its callees' $((a + b))"
# 4. callgrind: no time, so the cost at the reused address is shown under both names, and
#    counted as such; the same log names it (valgrind's own names are addresses).
cd "$T" && mkdir cg && cd cg
JITHERALD=auditlog JITHERALD_DIR=$T/cg valgrind -q --tool=callgrind --callgrind-out-file=cg.out \
    "$MINIJIT" --recompile-from "$P/phase2.mini" "$P/phase1.mini" 1000000 >/dev/null 2>vg.err ||
    { cat vg.err; fail "valgrind --tool=callgrind minijit"; }
cglog=$(ls minijit-*.jhlog)
"$CLI" log "$cglog" profile cg.out >cgprof.out 2>cgprof.err || { cat cgprof.err; fail "profile of callgrind.out"; }
head -5 cgprof.out
grep -Eq '^ *9[0-9]\.[0-9]+% +[0-9]+ .* spin_a \| spin_b  \(JIT\)$' cgprof.out ||
    fail "callgrind: no spin_a | spin_b row with 90% or more of the cost"
shared=$(awk '/spin_a \| spin_b  \(JIT\)$/ { print $2 }' cgprof.out)
grep -q "^JIT code: [0-9]* Ir; $shared (" cgprof.out || fail "callgrind: the merged cost is not counted"
cd "$T"

# 5. Inputs it cannot use are said so, with the exit status of a log command: 1.
rc=0; "$CLI" log "$log" profile "$log" >/dev/null 2>err || rc=$?
[ $rc = 1 ] && grep -q 'not a perf.data file or a callgrind profile: an audit log' err || fail "profile of a log: rc $rc, $(cat err)"
perf record -q -o other.data true 2>/dev/null
rc=0; "$CLI" log "$log" profile other.data >/dev/null 2>err || rc=$?
[ $rc = 1 ] && grep -q "no samples of pid $pid" err || fail "profile of another process: rc $rc, $(cat err)"
perf record -q -o - true 2>/dev/null >pipe.data
rc=0; "$CLI" log "$log" profile pipe.data >/dev/null 2>err || rc=$?
[ $rc = 1 ] && grep -q 'pipe-mode' err || fail "profile of pipe-mode perf.data: rc $rc, $(cat err)"
# Without -k 1 the times are perf's own clock: named by the code at the end, said so.
mkdir -p nok
JITHERALD=auditlog JITHERALD_DIR=$T/nok perf record -q -e cpu-clock -o nok.data \
    "$MINIJIT" "$P/phase1.mini" 10000000 >/dev/null 2>&1 || true
if "$CLI" log "$(ls nok/minijit-*.jhlog 2>/dev/null | head -1)" profile nok.data >nok.out 2>&1; then
    grep -q 'was not recorded with perf record -k 1' nok.out || { cat nok.out; fail "no -k 1 warning"; }
else
    cat nok.out; fail "profile of a perf.data without -k 1"
fi
echo "PASS: the profile names $a samples spin_a and $b spin_b by time; perf with the perf map misnames $want"
