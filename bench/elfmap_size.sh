#!/usr/bin/env bash
# elfmap_size.sh (bench) — what elfmap's images weigh per 1,000 functions (docs/fleet.md):
# apparent size (st_size: what tar, perf buildid-cache, debuginfod and copies to hosts
# without hole support move), blocks on disk, what perf buildid-cache stores for them and
# the tar.bz2 perf archive would make of that cache;
# this build beside a "before" build, same run, same workload (bench/elfmap --workload N 0:
# N 16-byte functions announced, then jh_close), and this build with
# JITHERALD_ELFMAP_FREEZE=1 (a new file per change: docs/fleet.md, "Identity").
#   JH_BENCH_BEFORE=DIR     the build directory of the "before" (its bench/elfmap); unset:
#                           main of this repository is built in a temporary directory
#                           (git archive main; a few minutes on 2 cores)
#   JH_BENCH_SIZES="1024 10240"
set -u
R=${JH_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
B=${JH_BUILD:-$R/build}
sizes=${JH_BENCH_SIZES:-1024 10240}
[ -x "$B/bench/elfmap" ] || { echo "$B/bench/elfmap not built (make bench)"; exit 0; }
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
before=${JH_BENCH_BEFORE:-}
if [ -z "$before" ]; then
    mkdir "$T/main"
    if git -C "$R" archive main 2>/dev/null | tar -x -C "$T/main" &&
        make -C "$T/main" -j2 build/bench/elfmap > "$T/main.log" 2>&1; then
        before=$T/main/build
    else
        echo "(main could not be built: no 'before' column; see JH_BENCH_BEFORE)"
    fi
fi

# run LABEL BUILD N [env...] -> "apparent disk cache_apparent cache_disk archive files us_per_fn"
# (KiB per 1,000 functions; us per function)
run() {
    local d=$T/$1-$3 f a=0 k=0 n=0
    mkdir -p "$d"
    env JITHERALD=elfmap JITHERALD_DIR="$d/img" "${@:4}" "$2/bench/elfmap" --workload "$3" 0 \
        2> "$d/err" || { echo "- - - - - - -"; return; }
    for f in $(find "$d/img" -name 'jit-*.elf'); do
        a=$((a + $(stat -c %s "$f"))); k=$((k + $(stat -c %b "$f") * 512)); n=$((n + 1))
        command -v perf > /dev/null && perf --buildid-dir "$d/cache" buildid-cache -a "$f" 2> /dev/null
    done
    local ca=0 ck=0 ar=0
    if [ -d "$d/cache" ]; then
        ca=$(du -s -B1 --apparent-size "$d/cache" | cut -f1); ck=$(du -s -B1 "$d/cache" | cut -f1)
        ar=$(tar cjf - -C "$d/cache" . 2> /dev/null | wc -c)
    fi
    local s
    s=$(sed -n 's/.* announced in \([0-9.]*\) s.*/\1/p' "$d/err")
    awk -v a="$a" -v k="$k" -v ca="$ca" -v ck="$ck" -v ar="$ar" -v n="$n" -v fn="$3" -v s="${s:-0}" 'BEGIN {
        per = 1000 / fn / 1024
        printf "%.0f %.0f %.0f %.0f %.0f %d %.1f\n", a * per, k * per, ca * per, ck * per, ar * per, n, s * 1e6 / fn }'
    rm -rf "$d"
}

echo "elfmap images per 1,000 functions, KiB (apparent: st_size; disk: blocks; cache: what perf"
echo "buildid-cache -a of every image stores; archive: that cache as perf archive packs it, tar cjf);"
echo "us/fn: announcing, wall time"
echo
printf '%9s %-8s %10s %8s %14s %11s %8s %6s %7s\n' functions build apparent disk cache-apparent \
    cache-disk archive files us/fn
for n in $sizes; do
    declare -A got=()
    for label in before after frozen; do
        case $label in
            before) [ -n "$before" ] || continue; got[$label]=$(run before "$before" "$n") ;;
            after) got[$label]=$(run after "$B" "$n") ;;
            frozen) got[$label]=$(run frozen "$B" "$n" JITHERALD_ELFMAP_FREEZE=1) ;;
        esac
        read -r a k ca ck ar files us <<< "${got[$label]}"
        printf '%9s %-8s %10s %8s %14s %11s %8s %6s %7s\n' "$n" "$label" "$a" "$k" "$ca" "$ck" "$ar" "$files" "$us"
    done
    if [ -n "$before" ]; then
        read -r a0 _ ca0 _ _ <<< "${got[before]}"
        read -r a1 _ ca1 _ _ <<< "${got[after]}"
        awk -v a0="$a0" -v a1="$a1" -v c0="$ca0" -v c1="$ca1" 'BEGIN {
            if (a1 > 0 && c1 > 0) printf "%9s before/after: apparent %.1fx, buildid-cache %.1fx\n", "", a0 / a1, c0 / c1 }'
    fi
    unset got
done
