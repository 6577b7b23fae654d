#!/usr/bin/env bash
# Runs the test tiers and ends with the line "N passed, N failed, N skipped" (CI reads it:
# it stays the last line), after the ten slowest tests with their seconds.
#   unit:        $BUILD/tests/*          (C and C++ programs; exit 0 = pass, 77 = skip)
#   fuzz:        $BUILD/fuzz/fuzz_*      (replay fuzz/corpus/<name>/ + bounded mutations)
#   integration: tests/integration/*.sh  (drive perf, gdb, lldb, valgrind...; 77 = skip;
#                                         lib.sh is what they share, not a test)
#   slow:        the integration scripts marked with a line "# tier: slow": real VMs'
#                code under callgrind, a minute or more each on a busy machine. `make test`
#                leaves them out (TIERS="unit fuzz integration"); `make test-slow` runs
#                them (TIERS=slow) and CI runs both.
#   arm64:       $BUILD/tests/arm64/* (tests/arm64/*.c; make test-arm64), and
#                tests/arm64/*.sh (gdb-multiarch on tests/arm64/programs/ under JH_EXEC)
# A skip prints its reason. With JH_REQUIRE_ALL=1 (CI) a skip counts as a failure: on CI
# every tool is installed, so a skip there means a missing install step.
# ONLY=pattern runs the tests whose name contains pattern (with the integration tier, the
# slow ones that match too).
# JH_EXEC="cmd args" runs the unit, fuzz and arm64 tiers' programs through cmd (make
# test-arm64: qemu-aarch64). JH_SKIP_LIST=file names, one a line, "NAME REASON" (# starts a
# comment): tests that cannot run there, not run and reported "SKIP (JH_SKIP_TAG: REASON)";
# "NAME part: REASON": run, and its skip (exit 77: one part could not run) is that reason.
# Those two kinds of skip are decisions written down, so JH_REQUIRE_ALL=1 does not fail them.
# JH_LOAD=N runs the tests while N busy processes keep the cores busy (scripts/busy.sh):
# every test must pass on a loaded machine too.
# Each test's output goes to a log in a directory of its own under $BUILD (not /tmp, where
# another run's or another user's cleanup may remove it mid-run): removed when every test
# passed, kept (and its path printed) when one failed.
set -u
if [ "${JH_LOAD:-0}" != 0 ] && [ -z "${JH_LOADED:-}" ]; then
    JH_LOADED=$JH_LOAD exec "$(dirname "$0")/../scripts/busy.sh" "$JH_LOAD" "$0" "$@"
fi
BUILD=${BUILD:-build}
TIERS=${TIERS:-unit fuzz integration}
export BUILD
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export JH_ROOT=$ROOT
export JH_BUILD=$ROOT/$BUILD
cd "$ROOT"
pass=0 fail=0 skip=0
failed=() skipped=() times=()
read -ra exec_pfx <<< "${JH_EXEC:-}"
declare -A listed=() listed_seen=()
if [ -n "${JH_SKIP_LIST:-}" ]; then
    while read -r n why || [ -n "$n" ]; do
        [ -n "$n" ] && [ "${n:0:1}" != "#" ] && listed[$n]=$why
    done < "$JH_SKIP_LIST" || { echo "cannot read JH_SKIP_LIST=$JH_SKIP_LIST"; exit 1; }
fi
[ -n "${JH_LOADED:-}" ] && echo "(under load: $JH_LOADED busy processes)"
mkdir -p "$JH_BUILD"
logdir=$(mktemp -d "$JH_BUILD/test-logs.XXXXXX")

run_one() { # name timeout cmd...
    local name=$1 t=$2; shift 2
    case "$name" in *"${ONLY:-}"*) ;; *) return ;; esac
    local log="$logdir/${name//\//_}.log" start=$SECONDS rc why
    local listed_why=${listed[$name]:-}
    if [ -n "$listed_why" ]; then
        listed_seen[$name]=1
        why="SKIP (${JH_SKIP_TAG:-listed}: ${listed_why#part: })"
        if [ "${listed_why#part: }" = "$listed_why" ]; then
            skip=$((skip + 1)); skipped+=("$name: $why")
            printf 'SKIP  %-44s %s\n' "$name" "$why"
            return
        fi
    fi
    timeout -k 10 "$t" "$@" >"$log" 2>&1
    rc=$?
    local dt=$((SECONDS - start))
    times+=("$dt $name")
    if [ $rc -eq 0 ]; then
        pass=$((pass + 1)); printf 'PASS  %-44s %3ss\n' "$name" "$dt"
    elif [ $rc -eq 77 ]; then
        local own; own=$(grep -m1 '^SKIP' "$log" || echo "SKIP (no reason given)")
        if [ -z "$listed_why" ]; then why=$own; else why="$why; the test: ${own#SKIP }"; fi
        if [ "${JH_REQUIRE_ALL:-0}" = 1 ] && [ -z "$listed_why" ]; then
            fail=$((fail + 1)); failed+=("$name")
            printf 'FAIL  %-44s skipped, but JH_REQUIRE_ALL=1: %s\n' "$name" "$why"
        else
            skip=$((skip + 1)); skipped+=("$name: $why")
            printf 'SKIP  %-44s %s\n' "$name" "$why"
        fi
    else
        fail=$((fail + 1)); failed+=("$name")
        [ $rc -eq 124 ] && echo "(timed out after ${t}s)" >>"$log"
        printf 'FAIL  %-44s rc=%s, log follows\n' "$name" "$rc"
        tail -n 60 "$log" | sed 's/^/    | /'
    fi
}

for tier in $TIERS; do
    case $tier in
    unit)
        for t in "$BUILD"/tests/*; do
            [ -x "$t" ] && [ -f "$t" ] || continue
            run_one "unit/$(basename "$t")" 300 ${exec_pfx[@]+"${exec_pfx[@]}"} "$t"
        done ;;
    arm64)
        for t in "$BUILD"/tests/arm64/*; do
            [ -x "$t" ] && [ -f "$t" ] || continue
            run_one "arm64/$(basename "$t")" 300 ${exec_pfx[@]+"${exec_pfx[@]}"} "$t"
        done
        # scripts that drive host tools (gdb-multiarch) against programs run under
        # JH_EXEC themselves: ARM64_PROG_DIR, ARM64_QEMU
        export ARM64_PROG_DIR=$JH_BUILD/tests/arm64-programs ARM64_QEMU="${JH_EXEC:-}"
        for t in tests/arm64/*.sh; do
            [ -f "$t" ] || continue
            run_one "arm64/$(basename "$t" .sh)" 300 bash "$t"
        done ;;
    fuzz)
        for t in "$BUILD"/fuzz/fuzz_*; do
            [ -x "$t" ] || continue
            n=$(basename "$t")
            run_one "fuzz/$n" 300 ${exec_pfx[@]+"${exec_pfx[@]}"} "$t" -runs="${JH_FUZZ_RUNS:-20000}" "fuzz/corpus/${n#fuzz_}"
        done ;;
    integration|slow)
        for t in tests/integration/*.sh; do
            [ -f "$t" ] && [ "$t" != tests/integration/lib.sh ] || continue
            if grep -qx '# tier: slow' "$t"; then
                [ $tier = slow ] || { [ -n "${ONLY:-}" ] && [[ " $TIERS " != *" slow "* ]]; } || continue
            else
                [ $tier = integration ] || continue
            fi
            run_one "integration/$(basename "$t" .sh)" 900 bash "$t"
        done ;;
    *) echo "unknown tier '$tier' (unit fuzz integration slow arm64)"; fail=$((fail + 1)) ;;
    esac
done

# An entry naming no test hides nothing, but is a sign the list went stale.
if [ -z "${ONLY:-}" ]; then
    for n in "${!listed[@]}"; do
        [ -n "${listed_seen[$n]:-}" ] || echo "note: $JH_SKIP_LIST names $n, which this run has not"
    done
fi

if [ ${#times[@]} -gt 0 ]; then
    echo; echo "slowest tests:"
    printf '%s\n' "${times[@]}" | sort -rn | head -10 | awk '{ printf "  %4ss  %s\n", $1, $2 }'
fi

if [ ${#skipped[@]} -gt 0 ]; then
    echo; echo "!!! ${#skipped[@]} test(s) SKIPPED — these checks did NOT run:"
    printf '!!!   %s\n' "${skipped[@]}"
fi
if [ ${#failed[@]} -gt 0 ]; then
    echo; echo "failed: ${failed[*]}  (logs in $logdir)"
else
    rm -rf "$logdir"
fi
echo
if [ $skip -gt 0 ]; then
    echo "$pass passed, $fail failed, $skip skipped"
else
    echo "$pass passed, $fail failed"
fi
[ $fail -eq 0 ] && [ $((pass + fail)) -gt 0 ]
