#!/usr/bin/env bash
# bench/llvm.sh — the LLVM adapter beside LLVM 14's own listeners, in the same run.
#
# 1. gdb: N one-function modules with DWARF (bench/llvm/modules.cc) compiled by ORC and
#    announced by LLVM's GDB registration listener (one in-memory object per module) or by
#    the jitherald adapter (JITHERALD=gdb: the RuntimeDyld listener and the JITLink plugin,
#    immediate mode; with no debugger listening it registers each object as it is, as
#    LLVM's listener does, and under gdb it describes it into packed images). Alone: the CPU time of the thread inside the listener per module
#    (the machine may be shared: its wall time counts whoever else ran), median of
#    JH_BENCH_LLVM_REPEAT runs, and its ratio to LLVM's listener in the same run (issue 30:
#    at most 2x). Under `gdb -batch -ex run`: the wall time inside the listener per module,
#    which includes the debugger's stops, LLVM's over ours (issue 30: at least 10x at
#    5,000), and gdb's peak memory (VmHWM). LLVM's listener is quadratic under gdb, so it
#    runs there up to JH_BENCH_LLVM_MAX modules (default 5000); beyond, its per-module cost
#    is extrapolated from a + b*N through the two largest measured points ("extrap.").
#      JH_BENCH_LLVM_N="1000 5000 20000"   the N to run alone
#      JH_BENCH_LLVM_GDB_N="1000 5000"     the N to run under gdb too
#      JH_BENCH_LLVM_REPEAT=3              runs per point alone (the median counts; 1 past 5000)
# 2. perf: the test JIT's hot loop (tests/programs/llvm/work.c, RuntimeDyld) recorded with
#    LLVM's perf listener (createPerfJITEventListener) and with the adapter (JITHERALD=
#    jitdump): `jitherald check` on both dumps, and after perf inject the share of the JIT
#    samples whose `perf report --sort srcline` is a real file:line.
set -u
B=$(cd "${JH_BUILD:-build}" 2>/dev/null && pwd) || { echo "no build directory"; exit 0; }
NS=${JH_BENCH_LLVM_N:-1000 5000 20000}
LLVM_MAX=${JH_BENCH_LLVM_MAX:-5000}
MOD=$B/bench/llvm/modules
JIT=$B/tests/programs/llvm_jit
CLI=$B/jitherald
[ -x "$MOD" ] && [ -x "$JIT" ] || { echo "LLVM adapter not built (llvm-14-dev, clang-14 missing?)"; exit 0; }
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT

# "WALL LISTENER_US CPU_US" of a run of modules; under gdb also gdb's VmHWM in kB
field() { sed -n 's/.* modules: \([0-9.]*\) s (listener \([0-9.]*\) us\/module, cpu \([0-9.]*\) us.*/\1 \2 \3/p' | tail -1; }
alone() { JITHERALD=gdb "$MOD" "$1" "$2" 2>/dev/null | field; }
under_gdb() {
    JITHERALD=gdb timeout 7200 gdb -q -nx -batch -ex run -ex 'shell grep VmHWM /proc/$PPID/status' \
        --args "$MOD" "$1" "$2" > "$T/gdb.out" 2>&1
    echo "$(field < "$T/gdb.out") $(awk '/^VmHWM:/ { print $2 }' "$T/gdb.out")"
}
median() { # R cmd... -> the line whose field $K is the median of R runs
    local r=$1 i; shift
    for ((i = 0; i < r; i++)); do "$@"; echo; done | awk -v k="$K" 'BEGIN { n = 0 } NF >= 3 { l[n] = $0; v[n++] = $k }
        END { for (i = 0; i < n; i++) for (j = i + 1; j < n; j++) if (v[j] < v[i]) {
                  t = v[i]; v[i] = v[j]; v[j] = t; t = l[i]; l[i] = l[j]; l[j] = t }
              if (n) print l[int((n - 1) / 2)] }'
}
REPEAT=${JH_BENCH_LLVM_REPEAT:-3}
GDB_NS=" ${JH_BENCH_LLVM_GDB_N-1000 5000} "
us() { awk -v v="${1:-}" 'BEGIN { if (v == "") print "-"; else printf "%.1f", v }'; }
ratio() { awk -v a="${1:-}" -v b="${2:-}" 'BEGIN { if (a == "" || b == "" || b == 0) print "-"; else printf "%.1fx", a / b }'; }

echo "Announcing N modules (one function each, with DWARF) to gdb: LLVM 14's GDB listener vs the adapter"
printf '%6s | %-18s | %7s | %10s %7s | %9s %13s %8s | %7s\n' N listener "wall s" "alone cpu" "/LLVM" \
    "gdb wall" "under gdb" "LLVM/us" "gdb peak"
declare -A LIST ALONE
pts=()
MODES="llvm-gdb jitherald jitherald-link"
for n in $NS; do
    # alone: the modes take turns, run after run, so that a change in the machine's load
    # falls on each alike; the median of each mode's runs counts
    r=$REPEAT
    [ "$n" -gt 5000 ] && r=1
    for mode in $MODES; do ALONE[$mode]=''; done
    for ((i = 0; i < r; i++)); do
        for mode in $MODES; do ALONE[$mode]+="$(alone $mode "$n")"$'\n'; done
    done
    llvm_cpu='' llvm_gdb=''
    for mode in $MODES; do
        case $mode in llvm-gdb) label="LLVM GDB listener" ;; jitherald) label="jitherald RTDyld" ;;
                      jitherald-link) label="jitherald JITLink" ;; esac
        read -r aw _ ac <<<"$(printf '%s' "${ALONE[$mode]}" | K=3 median 1 cat)"
        [ $mode = llvm-gdb ] && llvm_cpu=${ac:-}
        gw='' gl='' kb='' ext=''
        if [[ $GDB_NS == *" $n "* ]]; then
            if [ $mode = llvm-gdb ] && [ "$n" -gt "$LLVM_MAX" ]; then
                if [ ${#pts[@]} -ge 2 ]; then      # a*N + b*N^2 in total: a + b*N per module
                    gl=$(awk -v n1="${pts[-2]}" -v n2="${pts[-1]}" -v y1="${LIST[${pts[-2]}]}" \
                          -v y2="${LIST[${pts[-1]}]}" -v n="$n" 'BEGIN { b = (y2 - y1) / (n2 - n1); a = y1 - b * n1
                          if (b < 0) { b = 0; a = y2 }; printf "%.0f", a + b * n }')
                    ext=" extrap."
                fi
            else
                read -r gw gl _ kb <<<"$(under_gdb $mode "$n")"
                if [ $mode = llvm-gdb ] && [ -n "${gl:-}" ]; then LIST[$n]=$gl; pts+=("$n"); fi
            fi
            [ $mode = llvm-gdb ] && llvm_gdb=${gl:-}
        fi
        printf '%6s | %-18s | %7s | %7s us %7s | %9s %10s us %8s | %7s\n' "$n" "$label" "${aw:--}" \
            "$(us "${ac:-}")" "$(ratio "${ac:-}" "$llvm_cpu")" "${gw:--}" \
            "$(awk -v v="${gl:-}" 'BEGIN { if (v == "") print "-"; else printf "%.0f", v }')$ext" \
            "$([ $mode = llvm-gdb ] && echo - || ratio "$llvm_gdb" "${gl:-}")" \
            "$(awk -v k="${kb:-}" 'BEGIN { if (k == "") print "-"; else printf "%.0f MB", k / 1024 }')"
    done
done
echo "(wall s: the whole run alone, LLVM's compile time included; alone cpu: CPU time of the"
echo " thread inside the listener or plugin per module, median of $REPEAT runs up to 5000 (issue 30:"
echo " /LLVM at most 2x); under gdb: wall time inside the listener per module under"
echo " \`gdb -batch -ex run\`, the debugger's stops included, one run; LLVM/us: LLVM's per module"
echo " over ours (issue 30: at least 10x at 5000); gdb peak: gdb's VmHWM, libLLVM's symbols"
echo " included; LLVM past $LLVM_MAX modules under gdb: a + b*N fitted through its last two points)"

# ---- 2. perf: LLVM's perf listener vs the adapter's jitdump ------------------------------
command -v perf >/dev/null || { echo; echo "perf not installed: part 2 skipped"; exit 0; }
IR=$B/tests/programs/llvm
RUN=("$IR/entry.ll" "$IR/chain.ll" "$IR/work.ll" -- jit_entry 100000000)
cd "$T" || exit 0
P=(perf --buildid-dir "$T/buildid")
share() { # injected perf.data -> "jit_samples with_line total"
    "${P[@]}" report -i "$1" --stdio --no-children --sort dso,srcline -F overhead,sample,dso,srcline 2>/dev/null |
        awk '$3 ~ /^jitted-/ { n += $2; if ($4 ~ /^[^?][^:]*:[1-9][0-9]*$/) l += $2 } !/^#/ && NF >= 3 { t += $2 }
             END { printf "%d %d %d", n, l, t }'
}
printf '\nperf: the hot loop of tests/programs/llvm/work.c through jitdump + perf inject (RuntimeDyld)\n'
printf '%-31s | %-10s | %12s | %15s | %s\n' listener "check" "JIT samples" "with file:line" "top srclines of work"
for who in llvm jitherald; do
    rm -rf "$T/$who"
    if [ $who = llvm ]; then
        JITDUMPDIR=$T/$who "${P[@]}" record -q -k 1 -F 4000 -o $who.data "$JIT" --rtdyld --no-jitherald \
            --llvm-perf "${RUN[@]}" > /dev/null 2>&1
        label="LLVM createPerfJITEventListener"
    else
        JITHERALD=jitdump JITHERALD_DIR=$T/$who "${P[@]}" record -q -k 1 -F 4000 -o $who.data "$JIT" \
            --rtdyld "${RUN[@]}" > /dev/null 2>&1
        label="jitherald (JITHERALD=jitdump)"
    fi
    dump=$(find "$T/$who" -name 'jit-*.dump' | head -1)
    if [ -z "$dump" ]; then printf '%-31s | no dump written\n' "$label"; continue; fi
    verdict=$("$CLI" check -q "$dump" >/dev/null 2>&1 && echo ok || echo refused)
    "${P[@]}" inject --jit -i $who.data -o $who.inj 2>/dev/null
    read -r n l t <<<"$(share $who.inj)"
    top=$("${P[@]}" report -i $who.inj --stdio --no-children --sort sym,srcline 2>/dev/null |
          awk '$3 == "work" { printf "%s %s  ", $1, $4 }' | cut -c1-60)
    printf '%-31s | %-10s | %5s (%3s%%) | %8s (%3s%%) | %s\n' "$label" "$verdict" "$n" \
        "$(awk -v a="$n" -v b="$t" 'BEGIN { printf "%.0f", b ? 100 * a / b : 0 }')" "$l" \
        "$(awk -v a="$l" -v b="$n" 'BEGIN { printf "%.0f", b ? 100 * a / b : 0 }')" "$top"
    [ $verdict = refused ] && "$CLI" check "$dump" 2>&1 | head -2 | sed 's/^/    check: /'
done
echo "(JIT samples: samples in the jitted-*.so perf inject wrote, % of all samples; with"
echo " file:line: of those, the ones perf gives a source line; LLVM 14's listener writes its"
echo " DEBUG_INFO addresses 0x40 past the code, for a header perf no longer puts there)"
