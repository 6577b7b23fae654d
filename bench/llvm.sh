#!/usr/bin/env bash
# bench/llvm.sh — the LLVM adapter beside LLVM 14's own listeners, in the same run.
#
# 1. gdb: N one-function modules with DWARF (bench/llvm/modules.cc) compiled by ORC and
#    announced by LLVM's GDB registration listener (one in-memory object per module) or by
#    the jitherald adapter (JITHERALD=gdb: the RuntimeDyld listener and the JITLink plugin,
#    immediate mode; with no debugger listening it registers each object as it is, as
#    LLVM's listener does, and under gdb it describes it into packed images).
#    Alone: the CPU time of the thread inside the listener per module (the machine may be
#    shared: its wall time counts whoever else ran), median of JH_BENCH_LLVM_REPEAT runs,
#    the listeners taking turns run after run, and its ratio to LLVM's listener (issue 30:
#    at most 2x).
#    Under `gdb -batch -ex run`: the listeners take turns too, JH_BENCH_LLVM_GDB_REPEAT
#    rounds; per module the wall time inside the listener, which includes the debugger's
#    stops (issue 30: LLVM's at least 10x ours at 5,000), and the debugger's own CPU time
#    over the loop (gdb's threads, read by the program from its tracer's /proc stat: what
#    the registrations make gdb do, which the machine's load inflates far less than the
#    wall time of the stops), medians of the rounds, the ratio of the medians and the
#    range of the ratios round by round; gdb's peak memory (VmHWM). LLVM's listener is
#    quadratic under gdb, so it runs there up to JH_BENCH_LLVM_MAX modules (default 5000);
#    beyond, its per-module cost is extrapolated from a + b*N through the two largest
#    measured points ("extrap.").
#      JH_BENCH_LLVM_N="1000 5000 20000"   the N to run alone
#      JH_BENCH_LLVM_GDB_N="1000 5000"     the N to run under gdb
#      JH_BENCH_LLVM_REPEAT=3              runs per point alone (the median counts; 1 past 5000)
#      JH_BENCH_LLVM_GDB_REPEAT=3          rounds under gdb (1 past 5000)
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

# "WALL LISTENER_US CPU_US [DEBUGGER_CPU_US]" of a run of modules
field() { sed -n 's/.* modules: \([0-9.]*\) s (listener \([0-9.]*\) us\/module, cpu \([0-9.]*\) us[^,]*, check [0-9-]*\(, debugger cpu \([0-9.]*\) us\)\{0,1\}.*/\1 \2 \3 \5/p' | tail -1; }
alone() { JITHERALD=gdb "$MOD" "$1" "$2" 2>/dev/null | field; }
# under gdb: "WALL LISTENER_US CPU_US DEBUGGER_CPU_US GDB_VMHWM_KB"
under_gdb() {
    JITHERALD=gdb timeout 7200 gdb -q -nx -batch -ex run -ex 'shell grep VmHWM /proc/$PPID/status' \
        --args "$MOD" "$1" "$2" > "$T/gdb.out" 2>&1
    local f; f=$(field < "$T/gdb.out")
    [ -n "$f" ] && echo "$f $(awk '/^VmHWM:/ { print $2 }' "$T/gdb.out")"
}
median() { # lines on stdin -> the line whose field $K is the median
    awk -v k="$K" 'BEGIN { n = 0 } NF >= 3 { l[n] = $0; v[n++] = $k }
        END { for (i = 0; i < n; i++) for (j = i + 1; j < n; j++) if (v[j] < v[i]) {
                  t = v[i]; v[i] = v[j]; v[j] = t; t = l[i]; l[i] = l[j]; l[j] = t }
              if (n) print l[int((n - 1) / 2)] }'
}
load() { cut -d' ' -f1-3 /proc/loadavg; }
REPEAT=${JH_BENCH_LLVM_REPEAT:-3}
GDB_REPEAT=${JH_BENCH_LLVM_GDB_REPEAT:-3}
GDB_NS=${JH_BENCH_LLVM_GDB_N-1000 5000}
us() { awk -v v="${1:-}" 'BEGIN { if (v == "") print "-"; else printf "%.1f", v }'; }
ratio() { awk -v a="${1:-}" -v b="${2:-}" 'BEGIN { if (a == "" || b == "" || b == 0) print "-"; else printf "%.1fx", a / b }'; }
label() { case $1 in llvm-gdb) echo "LLVM GDB listener" ;; jitherald) echo "jitherald RTDyld" ;;
                     jitherald-link) echo "jitherald JITLink" ;; link-floor) echo "JITLink floor" ;; esac; }
# link-floor: JITLink with a plugin that does nothing, timed in the same five intervals per
# module as ours (the listeners: one): what the clock reads adds to JITLink's figure
MODES="llvm-gdb jitherald jitherald-link link-floor"
GDB_MODES="llvm-gdb jitherald jitherald-link"

echo "Announcing N modules (one function each, with DWARF), no debugger: LLVM 14's GDB listener vs the adapter"
echo "(load average before: $(load))"
printf '%6s | %-18s | %7s | %10s %7s\n' N listener "wall s" "alone cpu" "/LLVM"
declare -A RUNS
for n in $NS; do
    # the modes take turns, run after run, so that a change in the machine's load falls on
    # each alike; the median of each mode's runs counts
    r=$REPEAT
    [ "$n" -gt 5000 ] && r=1
    for mode in $MODES; do RUNS[$mode]=''; done
    for ((i = 0; i < r; i++)); do
        for mode in $MODES; do RUNS[$mode]+="$(alone $mode "$n")"$'\n'; done
    done
    llvm_cpu=''
    for mode in $MODES; do
        read -r aw _ ac _ <<<"$(printf '%s' "${RUNS[$mode]}" | K=3 median)"
        [ $mode = llvm-gdb ] && llvm_cpu=${ac:-}
        printf '%6s | %-18s | %7s | %7s us %7s\n' "$n" "$(label $mode)" "${aw:--}" \
            "$(us "${ac:-}")" "$(ratio "${ac:-}" "$llvm_cpu")"
    done
done
echo "(load average after: $(load); wall s: the whole run, LLVM's compile time included; alone"
echo " cpu: CPU time of the thread inside the listener or plugin per module, median of $REPEAT"
echo " interleaved runs up to 5000, one beyond; /LLVM: issue 30, at most 2x; JITLink floor:"
echo " a plugin doing nothing, timed as ours in five intervals per module, the listeners in one)"

if [ -n "${GDB_NS// /}" ]; then
echo
echo "The same under \`gdb -batch -ex run\`, the listeners taking turns, $GDB_REPEAT rounds (1 past 5000)"
echo "(load average before: $(load))"
printf '%6s | %-18s | %11s %8s %-11s | %12s %8s | %8s\n' N listener "listener" "LLVM/us" "per round" \
    "gdb cpu" "LLVM/us" "gdb peak"
pts=() llvm_med=()
declare -A LIST
for n in $GDB_NS; do
    r=$GDB_REPEAT
    [ "$n" -gt 5000 ] && r=1
    for mode in $GDB_MODES; do RUNS[$mode]=''; done
    for ((i = 0; i < r; i++)); do
        for mode in $GDB_MODES; do
            [ $mode = llvm-gdb ] && [ "$n" -gt "$LLVM_MAX" ] && continue
            RUNS[$mode]+="$(under_gdb $mode "$n")"$'\n'
        done
    done
    llvm_w='' llvm_d='' ext=''
    for mode in $GDB_MODES; do
        gl='' gd='' kb='' rounds='-'
        if [ $mode = llvm-gdb ] && [ "$n" -gt "$LLVM_MAX" ]; then
            if [ ${#pts[@]} -ge 2 ]; then      # a*N + b*N^2 in total: a + b*N per module
                gl=$(awk -v n1="${pts[-2]}" -v n2="${pts[-1]}" -v y1="${LIST[${pts[-2]}]}" \
                      -v y2="${LIST[${pts[-1]}]}" -v n="$n" 'BEGIN { b = (y2 - y1) / (n2 - n1); a = y1 - b * n1
                      if (b < 0) { b = 0; a = y2 }; printf "%.0f", a + b * n }')
                ext=" extrap."
            fi
        else
            read -r _ gl _ _ kb <<<"$(printf '%s' "${RUNS[$mode]}" | K=2 median)"
            read -r _ _ _ gd _ <<<"$(printf '%s' "${RUNS[$mode]}" | K=4 median)"
        fi
        if [ $mode = llvm-gdb ]; then
            llvm_w=${gl:-} llvm_d=${gd:-}
            if [ -z "$ext" ] && [ -n "${gl:-}" ]; then LIST[$n]=$gl; pts+=("$n"); fi
        elif [ -z "$ext" ] && [ -n "${RUNS[llvm-gdb]}" ]; then
            # LLVM's run over ours in the same round: the least and the greatest
            rounds=$(paste -d' ' <(printf '%s' "${RUNS[llvm-gdb]}" | awk 'NF >= 3 { print $2 }') \
                                 <(printf '%s' "${RUNS[$mode]}" | awk 'NF >= 3 { print $2 }') |
                     awk 'NF == 2 && $2 > 0 { v = $1 / $2; if (!n++ || v < lo) lo = v; if (n == 1 || v > hi) hi = v }
                          END { if (n) printf "%.1f-%.1fx", lo, hi; else print "-" }')
        fi
        printf '%6s | %-18s | %8s us %8s %-11s | %9s us %8s | %8s\n' "$n" "$(label $mode)" \
            "$(awk -v v="${gl:-}" 'BEGIN { if (v == "") print "-"; else printf "%.0f", v }')$ext" \
            "$([ $mode = llvm-gdb ] && echo - || ratio "$llvm_w" "${gl:-}")" "$rounds" \
            "$(awk -v v="${gd:-}" 'BEGIN { if (v == "") print "-"; else printf "%.0f", v }')" \
            "$([ $mode = llvm-gdb ] && echo - || ratio "$llvm_d" "${gd:-}")" \
            "$(awk -v k="${kb:-}" 'BEGIN { if (k == "") print "-"; else printf "%.0f MB", k / 1024 }')"
    done
done
echo "(load average after: $(load); listener: wall time inside the listener per module, the"
echo " debugger's stops included, median of the rounds; LLVM/us: LLVM's median over ours (issue 30:"
echo " at least 10x at 5000); per round: the least and greatest of LLVM's over ours round by round;"
echo " gdb cpu: gdb's CPU time (all its threads) over the loop per module, median; gdb peak: gdb's"
echo " VmHWM, libLLVM's symbols included; LLVM past $LLVM_MAX modules: a + b*N fitted through its"
echo " last two points)"
fi

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
