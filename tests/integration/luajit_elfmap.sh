#!/usr/bin/env bash
# `JITHERALD=elfmap luajit -l jitherald`: LuaJIT's trace pages re-mapped from ELF images.
#   1. plain `perf record` (no -k 1, no inject): perf report names the hot trace, in its
#      image, with most of the samples in traces;
#   2. callgrind names it too, with its image file, and callgrind_annotate lists each trace
#      on one row, with its source file and image (LuaJIT unmaps its code in lua_close,
#      before callgrind looks up each instruction's file for its profile: costs went to a
#      second row "???:TRACE_1 ..." with neither);
#   3. under churn (roots, side traces patching parents, flushes) and with no flush call,
#      every live trace is named by the image mapped at its address, with the very bytes
#      that run there (checked from /proc/self/maps inside the process); after jit.flush()
#      no mapping of an image is left;
#   4. image files are bounded, not by history: after 300 flushes and after 600, as many.
. "$(dirname "$0")/lib.sh"
require_tool perf linux-perf
require_tool valgrind valgrind
luajit_adapter
private_perf_cache
cd "$LUAJIT_SCRIPTS"
export JITHERALD=elfmap

# 1. perf, nothing to run afterwards
#    (TRACE_1 named, in its image, with most of the samples that fell in traces: a share,
#    not a rank, since kernel rows from the script's getpid calls may come first)
JITHERALD_DIR=$T/p perf record -q -e cpu-clock -F 5000 -o "$T/perf.data" -- luajit -l jitherald hot.lua 100 \
    >"$T/out" 2>&1 || fail "perf record: $(cat "$T/out")"
perf report -i "$T/perf.data" --stdio --sort sym,dso 2>/dev/null >"$T/report"
grep -Eq '^ +[0-9.]+% +\[\.\] TRACE_1 hot\.lua:7 +jit-[0-9]+-[0-9]+\.elf *$' "$T/report" ||
    { head -30 "$T/report"; fail "perf does not name TRACE_1 in its image"; }
sh=$(share "$T/report" '\] TRACE_1 ' '\] TRACE_[0-9]+ ')
[ "$sh" -ge 50 ] || { head -30 "$T/report"; fail "TRACE_1 has only $sh% of the samples in traces"; }

# 2. callgrind
JITHERALD_DIR=$T/c timeout 600 valgrind -q --tool=callgrind --callgrind-out-file="$T/cg.out" \
    luajit -l jitherald hot.lua 2 >"$T/out" 2>&1 || fail "callgrind: $(cat "$T/out")"
callgrind_annotate "$T/cg.out" >"$T/ann" 2>/dev/null
grep -Eq '^ *[0-9,]+ .*TRACE_1 hot\.lua:7.* \[.*/jit-[0-9]+-[0-9]+\.elf\]' "$T/ann" ||
    { head -40 "$T/ann"; fail "callgrind does not name TRACE_1"; }
#    every row of a trace, however small, with its file and image; one row per trace once
#    callgrind's own recursion mark is set aside (a trace entered again before callgrind saw
#    it return is `TRACE_1 hot.lua:7'2`, as plain LuaJIT's code is `0x...'2`)
callgrind_annotate --threshold=100 --auto=no "$T/cg.out" 2>/dev/null | grep -E '^ *[0-9,]+ .*TRACE_[0-9]+ ' >"$T/rows"
[ "$(grep -c 'TRACE_1 hot\.lua:7' "$T/rows")" -ge 1 ] && [ "$(grep -c 'TRACE_2 hot\.lua:9' "$T/rows")" -ge 1 ] ||
    { cat "$T/rows"; fail "callgrind: not every trace listed"; }
! grep -Ev '^ *[0-9,]+ \([ 0-9.]+%\)  \./hot\.lua:TRACE_[0-9]+ hot\.lua:[0-9]+('"'"'[0-9]+)? \[.*/jit-[0-9]+-[0-9]+\.elf\]$' "$T/rows" ||
    fail "callgrind: trace rows without their file or image: $(cat "$T/rows")"
d=$(sed -E "s/^ *[0-9,]+ \([ 0-9.]+%\)  //; s/'[0-9]+ \[/ [/" "$T/rows" | sort -u |
    grep -Eo 'TRACE_[0-9]+ ' | sort | uniq -d)
[ -z "$d" ] || fail "callgrind: traces on several rows: $d $(cat "$T/rows")"

# 3. every live trace named by its image, bytes identical, no flush call; nothing left after
JH_STRESS=$R/bench/luajit/stress.lua JITHERALD_DIR=$T/l timeout 120 \
    luajit -l jitherald elfmap_check.lua 300 2 3 >"$T/live" 2>&1 || fail "$(cat "$T/live")"
grep -Eq '^live [1-9][0-9]* checked$' "$T/live" || fail "$(cat "$T/live")"
! grep -q '^BAD' "$T/live" || { grep -c '^BAD' "$T/live"; grep '^BAD' "$T/live" | head -20; fail "live traces not in their image"; }
grep -q '^after flush: 0 mappings$' "$T/live" || fail "images still mapped after jit.flush(): $(grep after "$T/live")"

# 4. bounded files: after hundreds of flushes (each one new code areas, so new images) the
#    files on disk stop growing: twice the history, no more files (elfmap keeps a bounded
#    number of older generations for perf report, and the live windows)
files() { # flushes -> number of image files left
    rm -rf "$T/b"
    JITHERALD_DIR=$T/b timeout 120 luajit -l jitherald "$R/bench/luajit/stress.lua" 100 \
        $(($1 / 50 + 2)) "$1" >/dev/null 2>&1 || fail "stress with $1 flushes"
    find "$T/b" -name 'jit-*.elf' | wc -l
}
f1=$(files 300)
f2=$(files 600)
[ "$f2" -le $((f1 + 8)) ] || fail "image files grow with history: $f1 after 300 flushes, $f2 after 600"
echo "ok: perf: TRACE_1 $sh% of the trace samples; $(grep "^live" "$T/live"); files $f1 -> $f2"
