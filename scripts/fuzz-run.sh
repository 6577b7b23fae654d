#!/usr/bin/env bash
# scripts/fuzz-run.sh — `make fuzz-run`: every libFuzzer target of `make fuzz` in turn, for
# FUZZ_SECONDS each (default 60), from its corpus fuzz/corpus/<name>/, with ASan + UBSan
# and coverage. One target at a time: the machine stays usable. Prints a table of what each
# reached (executions, edges covered, features, inputs that added coverage) and keeps any
# crashing input in $FUZZ_OUT/<name>-crashes/ (default: a temporary directory, printed).
# Inputs that found new coverage go to $FUZZ_OUT/<name>-new/: merge the useful ones into
# the corpus with e.g.
#   build-fuzz/fuzz/fuzz_cfi -merge=1 fuzz/corpus/cfi "$FUZZ_OUT"/cfi-new
# A crash exits 1; the reproducer belongs in fuzz/corpus/<name>/ once fixed (make test
# replays every corpus file).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
SECS=${FUZZ_SECONDS:-60}
OUT=${FUZZ_OUT:-$(mktemp -d "${TMPDIR:-/tmp}/jh-fuzz.XXXXXX")}
ONLY=${ONLY:-}
mkdir -p "$OUT"
ls build-fuzz/fuzz/fuzz_* > /dev/null 2>&1 || { echo "no build-fuzz/fuzz/: run make fuzz"; exit 1; }
printf '%-16s %6s %12s %9s %6s %6s %7s %s\n' target seconds executions exec/s cov ft new crashes
bad=0
for t in build-fuzz/fuzz/fuzz_*; do
    n=$(basename "$t"); c=${n#fuzz_}
    case "$n" in *"$ONLY"*) ;; *) continue ;; esac
    mkdir -p "$OUT/$c-new" "$OUT/$c-crashes"
    start=$SECONDS
    "$t" "$OUT/$c-new" "fuzz/corpus/$c" -max_total_time="$SECS" -print_final_stats=1 \
        -rss_limit_mb=2048 -timeout=20 -artifact_prefix="$OUT/$c-crashes/" -close_fd_mask=3 \
        > "$OUT/$c.log" 2>&1
    rc=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$OUT/$c.log")
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$OUT/$c.log")
    newu=$(sed -n 's/^stat::new_units_added: *//p' "$OUT/$c.log")
    last=$(grep -E '^#[0-9]+.* cov: ' "$OUT/$c.log" | tail -1)
    cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<< "$last")
    ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<< "$last")
    crashes=$(find "$OUT/$c-crashes" -type f | wc -l)
    [ "$rc" = 0 ] && [ "$crashes" = 0 ] || bad=1
    printf '%-16s %6s %12s %9s %6s %6s %7s %s\n' "$n" $((SECONDS - start)) "${execs:-?}" \
        "${rate:-?}" "${cov:-?}" "${ft:-?}" "${newu:-?}" "$crashes$([ "$rc" = 0 ] || echo " (rc $rc, see $OUT/$c.log)")"
done
echo "(logs and new inputs in $OUT)"
exit $bad
