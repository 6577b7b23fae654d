#!/usr/bin/env bash
# bench/gdb.sh — registering N functions under `gdb -batch -ex run`, minus the same run
# without gdb, per function: jitherald's gdb channel (default immediate mode, and deferred
# mode) beside LLVM 14 ORC with its own GDB registration listener (bench/gdb_llvm/peer.c,
# built here with llvm-config-14; one module = one object = one registration per function).
# Times are measured inside each program around its registration loop (gdb's own start-up,
# e.g. reading libLLVM's symbols, is not counted against anyone).
#
# LLVM is quadratic under gdb, so it runs only up to JH_BENCH_GDB_LLVM_MAX (default 2000);
# larger N are extrapolated from a fit a*N + b*N^2 through the two largest measured points
# and marked "extrap.". Our immediate mode costs ~2 debugger stops per function, so it
# runs up to 10k by default (JH_BENCH_GDB_FULL=1: 100k too). Deferred mode runs all N.
#   JH_BENCH_GDB_N="1000 10000 100000"   the N to run
set -u
B=${JH_BUILD:-build}
NS=${JH_BENCH_GDB_N:-1000 10000 100000}
LLVM_MAX=${JH_BENCH_GDB_LLVM_MAX:-2000}
FULL=${JH_BENCH_GDB_FULL:-0}
BIN=$B/bench/gdb
command -v gdb >/dev/null || { echo "gdb not installed: nothing to measure"; exit 0; }
[ -x "$BIN" ] || { echo "$BIN missing (make bench builds it)"; exit 0; }
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT

peer=
if command -v llvm-config-14 >/dev/null &&
   cc -O2 $(llvm-config-14 --cflags) "$(dirname "$0")/gdb_llvm/peer.c" \
      $(llvm-config-14 --ldflags --libs) -o "$T/peer" 2>"$T/peer.err"; then
    peer=$T/peer
else
    echo "(LLVM peer not built: llvm-14-dev missing?) $(head -3 "$T/peer.err" 2>/dev/null)"
fi

secs() { sed -n 's/.*functions: \([0-9.]*\) s.*/\1/p' | tail -1; }
ours() { "$BIN" --run "$1" "$2" | secs; }
ours_gdb() { timeout 900 gdb -q -nx -batch -ex run --args "$BIN" --run "$1" "$2" 2>/dev/null | secs; }
llvm() { "$peer" "$1" | secs; }
llvm_gdb() { timeout 900 gdb -q -nx -batch -ex run --args "$peer" "$1" 2>/dev/null | secs; }
per_fn() { awk -v a="$1" -v b="$2" -v n="$3" 'BEGIN { if (a == "" || b == "") print "-"; else printf "%.1f", (b - a) / n * 1e6 }'; }

# LLVM: measure the small N first (for the fit), largest measured last
declare -A L_ALONE L_GDB
lpoints=()
if [ -n "$peer" ]; then
    for n in 500 1000 $LLVM_MAX; do
        [ "$n" -le "$LLVM_MAX" ] || continue
        case " ${lpoints[*]-} " in *" $n "*) continue ;; esac
        L_ALONE[$n]=$(llvm "$n"); L_GDB[$n]=$(llvm_gdb "$n")
        lpoints+=("$n")
    done
fi
# fit a*N + b*N^2 (overhead in seconds) through the two largest measured points
fit=$(awk -v pts="${lpoints[*]-}" -v data="$(for n in "${lpoints[@]-}"; do [ -n "$n" ] && echo "$n ${L_ALONE[$n]} ${L_GDB[$n]}"; done | tr '\n' ';')" 'BEGIN {
    k = split(data, rows, ";"); m = 0
    for (i = 1; i <= k; i++) if (split(rows[i], f, " ") == 3 && f[3] != "") { m++; N[m] = f[1]; O[m] = f[3] - f[2] }
    if (m < 2) { print ""; exit }
    n1 = N[m-1]; o1 = O[m-1]; n2 = N[m]; o2 = O[m]
    b = (o2 / n2 - o1 / n1) / (n2 - n1); a = o1 / n1 - b * n1
    if (b < 0) { b = 0; a = o2 / n2 }
    printf "%.9g %.9g", a, b }')

printf '\nRegistering N functions: time added by running under gdb, per function (us)\n'
printf '%8s | %10s %10s %9s | %9s | %10s %10s %12s | %9s %9s\n' N "ours alone" "under gdb" "ours/fn" \
    "deferred" "llvm alone" "under gdb" "llvm/fn" "llvm/ours" "llvm/def."
for n in $NS; do
    oi_a=; oi_g=; oi=-
    if [ "$n" -le 10000 ] || [ "$FULL" = 1 ]; then
        oi_a=$(ours "$n" immediate); oi_g=$(ours_gdb "$n" immediate); oi=$(per_fn "$oi_a" "$oi_g" "$n")
    fi
    od=$(per_fn "$(ours "$n" defer)" "$(ours_gdb "$n" defer)" "$n")
    la=-; lg=-; lf=-
    if [ -n "${L_GDB[$n]-}" ]; then
        la=${L_ALONE[$n]}; lg=${L_GDB[$n]}; lf=$(per_fn "$la" "$lg" "$n")
    elif [ -n "$fit" ]; then
        lf=$(awk -v f="$fit" -v n="$n" 'BEGIN { split(f, c, " "); printf "%.0f extrap.", (c[1] + c[2] * n) * 1e6 }')
    fi
    r1=$(awk -v l="${lf%% *}" -v o="$oi" 'BEGIN { if (l == "-" || o == "-" || o <= 0) print "-"; else printf "%.0fx", l / o }')
    r2=$(awk -v l="${lf%% *}" -v o="$od" 'BEGIN { if (l == "-" || o == "-" || o <= 0) print "-"; else printf "%.0fx", l / o }')
    printf '%8s | %10s %10s %9s | %9s | %10s %10s %12s | %9s %9s\n' "$n" "${oi_a:--}" "${oi_g:--}" "$oi" \
        "$od" "$la" "$lg" "$lf" "$r1" "$r2"
done
for n in "${lpoints[@]-}"; do
    [ -n "$n" ] || continue
    case " $NS " in *" $n "*) continue ;; esac
    printf '%8s | %10s %10s %9s | %9s | %10s %10s %12s |\n' "$n" - - - - "${L_ALONE[$n]}" "${L_GDB[$n]}" \
        "$(per_fn "${L_ALONE[$n]}" "${L_GDB[$n]}" "$n")"
done
echo "(seconds for 'alone'/'under gdb'; ours = default immediate mode: each function visible"
echo " to the debugger before jh_code_add returns; deferred = JH_GDB_DEFER, visible at"
echo " jh_flush(); llvm/fn 'extrap.' = fitted a*N+b*N^2 from LLVM's measured N, not measured)"

# Aligned functions: a 34-byte body in each 48-byte slot, as most JITs align code. One
# .text section per function here once made gdb quadratic (5k: 15.8 s, 20k: 338 s).
printf '\nAligned functions (14-byte gaps), immediate mode under gdb: seconds, and the growth\n'
printf '%8s | %10s %10s | %9s | %s\n' N "adjacent" "aligned" "aligned/fn" "x time for 4x N"
prev=
for n in ${JH_BENCH_GDB_GAP_N:-2000 8000}; do
    adj=$(ours_gdb "$n" immediate)
    ali=$(JH_BENCH_GDB_GAP=14 ours_gdb "$n" immediate)
    grow=$(awk -v a="$ali" -v p="$prev" 'BEGIN { if (p == "" || p <= 0 || a == "") print "-"; else printf "%.1fx", a / p }')
    printf '%8s | %10s %10s | %9s | %s\n' "$n" "${adj:--}" "${ali:--}" \
        "$(awk -v a="$ali" -v n="$n" 'BEGIN { if (a == "") print "-"; else printf "%.0f us", a / n * 1e6 }')" "$grow"
    prev=$ali
done
