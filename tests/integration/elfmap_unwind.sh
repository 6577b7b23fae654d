#!/usr/bin/env bash
# elfmap_unwind.sh — JIT code without frame pointers, unwound by tools that know nothing of
# JITs, from elfmap's image files alone (JITHERALD=elfmap: no perf map, no jitdump):
#   perf record --call-graph dwarf (perf 6.1 unwinds with libunwind through each mapping's
#     .eh_frame_hdr): samples in the JIT function fib unwind through the fib frames and
#     main (JIT) to the C caller mj_call and on to the C main. Control, the same program with images that lack
#     .eh_frame (JITHERALD_ELFMAP_NO_EH_FRAME=1: .debug_frame only, as before): none does.
#   eu-stack -p (libdw) on the running demo names the JIT frames and walks through them to
#     mj_call and main. libdw reads .eh_frame or .debug_frame (either alone is enough,
#     docs/elfmap.md); the control announces the functions without unwind information
#     (minijit --no-unwind-info): eu-stack stops in the first JIT frame.
#   readelf and llvm-dwarfdump-14 --verify accept an image: PT_GNU_EH_FRAME, one FDE per
#     function in .eh_frame, the .eh_frame_hdr table's count.
# The demo runs with --no-frame-pointer (codegen_x64.c): rbp is no frame record there, so no
# frame-pointer fallback of perf, libunwind or libdw can pass the JIT frames; only the CFI.
# perf 6.1 fails about 4 in 10 dwarf unwinds of perf inject's jitted-*.so files
# (jitdump_dwarf.sh); these images: every recording, measured below (docs/elfmap.md). Each
# of the 3 recordings must unwind >= 90% of its fib samples; every control, none.
. "$(dirname "$0")/lib.sh"
require_tool perf linux-perf
require_tool eu-stack elfutils
require_tool llvm-dwarfdump-14 llvm-14
private_perf_cache
cd "$T"
export JITHERALD=elfmap
FIB=$MINI/fib.mini

# Per sample (leaf first): samples whose leaf is the JIT function fib, and how many of those
# have a chain that reaches the C caller mj_call.
# (and "N M K": K of them go on past mj_call to the C main, the end of the program's stack)
chains() { # perf.data -> "N M K"
    perf script -i "$1" -F ip,sym 2>/dev/null >"$1.txt"
    awk 'BEGIN { RS = "" } { split($0, l, "\n"); if (l[1] ~ / fib$/) { n++; if ($0 ~ /mj_call/) c++
                                 if ($0 ~ /mj_call\n(.*\n)*[^\n]* main(\n|$)/) k++ } }
         END { print n + 0, c + 0, k + 0 }' "$1.txt"
}
record() { # NAME [env...]: perf record of the demo, images in $T/NAME
    rm -rf "$1"
    touch "$1.start"
    env JITHERALD_DIR="$T/$1" "${@:2}" perf record -q -F 2000 --call-graph dwarf,16384 \
        -o "$1.data" "$MINIJIT" --no-frame-pointer --repeat 4 "$FIB" 30 >"$1.out" 2>"$1.err" ||
        { cat "$1.err"; fail "perf record ($1)"; }
    [ "$(tail -1 "$1.out")" = 832040 ] || fail "$1: wrong fib result: $(tail -1 "$1.out")"
    local pid
    pid=$(perf script -i "$1.data" -F pid 2>/dev/null | head -1 | tr -d ' ')
    # (a map of an earlier process with the same pid may be there: not one written since)
    [ ! "/tmp/perf-$pid.map" -nt "$1.start" ] || fail "$1: a perf map was written"
    ls "$1"/jit-*.elf >/dev/null || fail "$1: no image written"
}

tally=
for run in 1 2 3; do
    record with
    read -r n c k <<<"$(chains with.data)"
    [ "$n" -ge 10 ] || fail "only $n samples in fib"
    record without JITHERALD_ELFMAP_NO_EH_FRAME=1
    read -r n0 c0 _ <<<"$(chains without.data)"
    [ "$n0" -ge 10 ] || fail "control: only $n0 samples in fib"
    tally="$tally run $run: $c/$n with, $c0/$n0 without;"
    echo "run $run: with .eh_frame $c of $n samples in fib unwind to mj_call; without: $c0 of $n0"
    [ "$c0" = 0 ] || fail "control: $c0 chains pass the JIT frames without .eh_frame, so the test proves nothing"
    [ $((c * 10)) -ge $((n * 9)) ] || fail "dwarf unwinding did not pass the JIT frames:$tally"
    echo "run $run: $k of $n go on to the C main"
    [ $((k * 10)) -ge $((n * 9)) ] || fail "dwarf unwinding stops between mj_call and main:$tally"
done
awk 'BEGIN { RS = "" } $0 ~ / fib\n/ && / main\n/ && /mj_call/ { print; exit }' with.data.txt

# The image the last recording left: what readelf and llvm-dwarfdump make of it.
img=$(ls with/jit-*.elf | head -1)
readelf -W -l -S "$img" >sections
grep -E '^ +GNU_EH_FRAME ' sections || fail "no PT_GNU_EH_FRAME"
grep -E '\] \.eh_frame_hdr ' sections && grep -E '\] \.eh_frame ' sections
nfn=$(readelf -W -s "$img" | grep -c ' FUNC ')
readelf --debug-dump=frames "$img" >frames 2>&1
! grep -E 'Warning|Error' frames || fail "readelf complains"
neh=$(awk '/^Contents of the .eh_frame section/ { on = 1 } /^Contents of the .debug_frame/ { on = 0 }
           on && / FDE cie=/ { n++ } END { print n + 0 }' frames)
[ "$neh" = "$nfn" ] || fail ".eh_frame has $neh FDEs for $nfn functions"
eu-readelf --debug-dump=frames "$img" | grep -E "^ fde_count: +$nfn$" || fail ".eh_frame_hdr does not count $nfn FDEs"
llvm-dwarfdump-14 --verify "$img" | grep -x 'No errors.' || fail "llvm-dwarfdump-14 --verify"
! readelf -W -l -S "$(ls without/jit-*.elf | head -1)" | grep -qi 'eh_frame' ||
    fail "the control's image has .eh_frame"

# eu-stack on the running demo: a stack whose leaf is fib must reach mj_call (with) or
# must not (control). The demo may be between two runs of main when eu-stack stops it:
# look again, up to 20 times.
stack() { # OUT minijit-options...
    local i pid
    for i in $(seq 20); do
        rm -rf es
        JITHERALD_DIR=$T/es "$MINIJIT" --no-frame-pointer "${@:2}" --repeat 1000000 "$FIB" 22 \
            >/dev/null 2>es.err &
        pid=$!
        kill_at_exit $pid
        local end=$((SECONDS + 60))
        until grep -q 'jit-.*\.elf' "/proc/$pid/maps" 2>/dev/null; do
            kill -0 "$pid" 2>/dev/null || { cat es.err; fail "the demo ended before eu-stack"; }
            [ $SECONDS -lt $end ] || { cat es.err "/proc/$pid/maps"; fail "no image mapped after 60 s"; }
            sleep 0.05
        done
        eu-stack -p "$pid" >"$1" 2>&1 || true
        kill -9 "$pid"; wait "$pid" 2>/dev/null || true
        grep -qE '^#0 +0x[0-9a-f]+ fib$' "$1" && return 0
    done
    cat "$1"
    fail "eu-stack never found the demo in fib"
}
stack es.txt
head -8 es.txt
[ "$(grep -cE '^#[0-9]+ +0x[0-9a-f]+ fib$' es.txt)" -ge 2 ] || fail "eu-stack names fewer than 2 fib frames"
grep -E '^#[0-9]+ +0x[0-9a-f]+ main$' es.txt >/dev/null || fail "eu-stack: no JIT main frame"
grep -E ' mj_call$' es.txt || fail "eu-stack does not unwind through the JIT frames to mj_call"
awk '/ mj_call$/ { past = 1 } past && / main$/ { ok = 1 } END { exit !ok }' es.txt ||
    fail "eu-stack does not unwind on from mj_call to the C main"
stack es0.txt --no-unwind-info
! grep -E ' mj_call$' es0.txt || fail "control: eu-stack passes JIT frames that have no unwind information"
echo "PASS: perf --call-graph dwarf and eu-stack unwind frameless JIT code through the images' CFI;$tally"
