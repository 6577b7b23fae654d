#!/usr/bin/env bash
# elfmap.sh (bench) — from the end of `perf record` to a symbolized `perf report`:
#   elfmap:            perf report reads the image files the code pages are mapped from
#   jitdump + inject:  perf inject --jit (one ELF file per function), then perf report
# on the same perf.data of the same run (both channels on; -k 1, which inject needs).
#   JH_BENCH_SIZES="1024 10240 102400"   functions (multiples of 256: whole pages)
#   JH_BENCH_INJECT_CAP=45               seconds; a longer inject is stopped and shown as a
#                                        lower bound (">45"). It writes every jitted-*.so
#                                        early and then keeps working, so its time cannot be
#                                        extrapolated from them. Measured here uncapped, at
#                                        102,400 functions: inject 78.7 s + report 0.67 s.
set -u
B=${JH_BUILD:-build}
command -v perf > /dev/null || { echo "perf is not installed: skipped"; exit 0; }
[ -x "$B/bench/elfmap" ] || { echo "$B/bench/elfmap not built (make bench)"; exit 0; }
sizes=${JH_BENCH_SIZES:-1024 10240 102400}
cap=${JH_BENCH_INJECT_CAP:-45}
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }
named() { # share of the samples the report puts on jitfn_* symbols (sample counts, -n)
    awk -v total="$2" '/\[\.\] jitfn_[0-9]+/ { s += $2 } END { printf "%.1f%%", 100 * s / total }' "$1"; }
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
    perf report -i "$d/perf.data" --stdio -n --sort sym > "$d/em.txt" 2> /dev/null
    t1=$EPOCHREALTIME
    em=$(secs "$t0" "$t1"); em_named=$(named "$d/em.txt" "$samples")
    t0=$EPOCHREALTIME
    timeout "$cap" perf inject --jit -i "$d/perf.data" -o "$d/perf.jit.data" 2> /dev/null
    rc=$?
    t1=$EPOCHREALTIME
    inj=$(secs "$t0" "$t1")
    if [ $rc -eq 124 ]; then
        printf '%9s %8s | %9s %7s | %9s %9s %9s %7s | %8s\n' "$n" "$samples" "$em" "$em_named" \
            ">$cap" "-" ">$cap" "-" ">$(awk -v a="$cap" -v b="$em" 'BEGIN { printf "%.0fx", a / b }')"
        capped=1
        rm -rf "$d"
        continue
    fi
    t0=$EPOCHREALTIME
    perf report -i "$d/perf.jit.data" --stdio -n --sort sym > "$d/jd.txt" 2> /dev/null
    t1=$EPOCHREALTIME
    rep=$(secs "$t0" "$t1"); jd_named=$(named "$d/jd.txt" "$samples")
    tot=$(awk -v a="$inj" -v b="$rep" 'BEGIN { printf "%.2f", a + b }')
    printf '%9s %8s | %9s %7s | %9s %9s %9s %7s | %7.0fx\n' "$n" "$samples" "$em" "$em_named" \
        "$inj" "$rep" "$tot" "$jd_named" "$(awk -v a="$tot" -v b="$em" 'BEGIN { print a / b }')"
    rm -rf "$d"
done
[ "${capped:-0}" = 1 ] && echo "\">\": perf inject stopped after ${cap}s (JH_BENCH_INJECT_CAP); the real time is longer: a lower bound."
exit 0
