#!/usr/bin/env bash
# elfmap.sh (bench) — from the end of `perf record` to a symbolized `perf report`:
#   elfmap:            perf report reads the image files the code pages are mapped from
#   jitdump + inject:  perf inject --jit (one ELF file per function), then perf report
# on the same perf.data of the same run (both channels on; -k 1, which inject needs).
#   JH_BENCH_SIZES="1024 10240 102400"   functions (multiples of 256: whole pages)
#   JH_BENCH_INJECT_CAP=45               seconds; a longer inject is stopped and its time
#                                        extrapolated from the share of jitted-*.so written
set -u
B=${JH_BUILD:-build}
command -v perf > /dev/null || { echo "perf is not installed: skipped"; exit 0; }
[ -x "$B/bench/elfmap" ] || { echo "$B/bench/elfmap not built (make bench)"; exit 0; }
sizes=${JH_BENCH_SIZES:-1024 10240 102400}
cap=${JH_BENCH_INJECT_CAP:-45}
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }
named() { # percentage of samples the report puts on jitfn_* symbols
    grep -E '\[\.\] jitfn_[0-9]+' "$1" | awk '{ s += $1 } END { printf "%.1f%%", s }'; }
echo "From the end of perf record to a symbolized perf report (perf report --stdio --sort sym),"
echo "same perf.data for both; 'named' = share of all samples on JIT function names."
echo
printf '%9s %8s | %9s %7s | %9s %9s %9s %7s | %8s\n' functions samples elfmap named \
    inject report total named speedup
for n in $sizes; do
    d=$T/$n; mkdir -p "$d"
    JITHERALD=elfmap,jitdump JITHERALD_DIR=$d/jh perf record -q -k 1 -o "$d/perf.data" \
        "$B/bench/elfmap" --workload "$n" 2 2> "$d/rec.err" ||
        { echo "perf record failed:"; cat "$d/rec.err"; exit 0; }
    samples=$(perf script -i "$d/perf.data" -F ip 2> /dev/null | wc -l)
    t0=$EPOCHREALTIME
    perf report -i "$d/perf.data" --stdio --sort sym > "$d/em.txt" 2> /dev/null
    t1=$EPOCHREALTIME
    em=$(secs "$t0" "$t1"); em_named=$(named "$d/em.txt")
    t0=$EPOCHREALTIME
    timeout "$cap" perf inject --jit -i "$d/perf.data" -o "$d/perf.jit.data" 2> /dev/null
    rc=$?
    t1=$EPOCHREALTIME
    inj=$(secs "$t0" "$t1")
    if [ $rc -eq 124 ]; then
        done_n=$(find "$d/jh" -name 'jitted-*.so' | wc -l)
        inj=$(awk -v t="$inj" -v n="$n" -v k="$done_n" 'BEGIN { printf "%.0f", k ? t * n / k : 0 }')
        printf '%9s %8s | %9s %7s | %8s* %9s %8s* %7s | %7.0fx*\n' "$n" "$samples" "$em" "$em_named" \
            "$inj" "-" "$inj" "-" "$(awk -v a="$inj" -v b="$em" 'BEGIN { print a / b }')"
        capped=1
        continue
    fi
    t0=$EPOCHREALTIME
    perf report -i "$d/perf.jit.data" --stdio --sort sym > "$d/jd.txt" 2> /dev/null
    t1=$EPOCHREALTIME
    rep=$(secs "$t0" "$t1"); jd_named=$(named "$d/jd.txt")
    tot=$(awk -v a="$inj" -v b="$rep" 'BEGIN { printf "%.2f", a + b }')
    printf '%9s %8s | %9s %7s | %9s %9s %9s %7s | %7.0fx\n' "$n" "$samples" "$em" "$em_named" \
        "$inj" "$rep" "$tot" "$jd_named" "$(awk -v a="$tot" -v b="$em" 'BEGIN { print a / b }')"
    rm -rf "$d"
done
[ "${capped:-0}" = 1 ] && echo "* perf inject stopped after ${cap}s; its time extrapolated linearly from the jitted-*.so files it had written (a lower bound: the report after it is not counted)."
exit 0
