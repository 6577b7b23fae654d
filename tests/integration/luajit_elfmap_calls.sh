#!/usr/bin/env bash
# `JITHERALD=elfmap luajit -l jitherald`: the system calls elfmap's hooks make per trace,
# counted by strace on bench/luajit/stress.lua (~1,600 traces here, most of them side traces
# that patch their parent; flushes retire the images). A trace's code and its parent's
# patch are stored through the image's shared mapping (docs/elfmap.md, "How the image is
# written"), which holds the file whatever the program does with descriptor numbers, so
#   1. no pwrite per trace (was 1.8: the code, and the parent's code again at each patch);
#   2. the image's kept descriptor is proven ours (statx: base/files.h, jh__kfd) only when
#      a system call is about to use it, not at every add and patch: at most 1.5 a trace,
#      the maps descriptor's for the add's look at the mappings (was 2.8: that one, the
#      image's at the add and again at the patch). The guarantee itself, a program that
#      reuses our numbers never written to, is tests/unit/test_kept_fds.c's;
#   3. a growing image is allocated (fallocate) and mapped ahead, as much again as its
#      metadata: at most one allocation per 40 traces (was one per 27: one per section
#      moving to the file's end). A full disk stays an error: elfmap_disk_full.sh;
#   4. what the file system can do (fstatfs, the first page's fallocate) is asked once
#      per device, not for each window's file (was one each: 5 here, ~20 us each);
#   5. no chunk a section moved out of is punched out of the file (FALLOC_FL_PUNCH_HOLE):
#      it is room for the next section to move into, and an image keeps less than 1 MiB
#      of it (was 2 punches at each flush, when the window retires: ~2.6 ms each on a
#      discard-mounted ext4, 10% of elfmap's CPU).
#
# The counts hold where elfmap can map the image's file above a window's code (elfmap_write.c,
# map_above). LuaJIT places its code areas at random (the first within 1 GiB of its binary,
# later ones below the last): in about one run in 20 to 60 here, another area or the heap
# lies within the ~4 MiB above a window, the mapping is refused (MAP_FIXED_NOREPLACE:
# EEXIST, never anything of the program's replaced) and that window's code goes by pwrite,
# as documented. Such a run says nothing about the counts above: it is run again, with
# another layout, up to 3 times, and the test fails if every run fell back.
. "$(dirname "$0")/lib.sh"
require_tool strace strace
luajit_adapter
export JITHERALD=elfmap JITHERALD_DIR=$T/d
for try in 1 2 3; do
    rm -rf "$T/d"
    strace -f -qq -e trace=statx,fstat,newfstatat,pwrite64,pwritev,fallocate,fstatfs,mmap -o "$T/strace" \
        timeout 300 luajit -l jitherald "$R/bench/luajit/stress.lua" 200 2 4 count >"$T/out" 2>&1 ||
        fail "stress.lua under strace: $(cat "$T/out")"
    # the whole file mapped above a window's code (offset 0), refused: the layout's fallback
    grep -Eq 'MAP_SHARED\|MAP_FIXED_NOREPLACE, [0-9]+, 0\) = -1 EEXIST' "$T/strace" || break
    echo "run $try: no room above a window's code in this layout (pwrite as documented): again"
    [ $try -lt 3 ] || fail "3 runs, each with a window that had no room above its code"
done
traces=$(grep -Eo 'traces [0-9]+' "$T/out" | grep -Eo '[0-9]+')
[ "${traces:-0}" -ge 500 ] || fail "too few traces to count: $(cat "$T/out")"
n() { grep -Ec "^[0-9]+ +($1)\(" "$T/strace"; }
stats=$(n 'statx|fstat|newfstatat') writes=$(n 'pwrite64|pwritev')
grows=$(grep -Ec '^[0-9]+ +fallocate\([0-9]+, 0,' "$T/strace")
punches=$(grep -Ec '^[0-9]+ +fallocate\(.*PUNCH_HOLE' "$T/strace" || true)
asks=$(grep -Ec '^[0-9]+ +fallocate\([0-9]+, 0, 0,' "$T/strace" || true)
flushes=$(grep -Eo 'flushes [0-9]+' "$T/out" | grep -Eo '[0-9]+')
# (a fresh generation at each flush and the images' growth write a few spans with pwrite)
[ $((writes * 10)) -le "$traces" ] ||
    fail "$writes pwrites for $traces traces (at most one per 10 traces)"
[ $((stats * 2)) -le $((traces * 3)) ] ||
    { sort "$T/strace" | sed -E 's/^[0-9]+ +//; s/\(([0-9]+),.*/(\1)/' | uniq -c | sort -rn | head
      fail "$stats statx/fstat for $traces traces (at most 1.5 a trace)"; }
[ $((grows * 40)) -le "$traces" ] || fail "$grows allocations for $traces traces (at most one per 40)"
[ "${flushes:-0}" -ge 2 ] || fail "no windows retired to count: $(cat "$T/out")"
[ "$asks" -le 1 ] || fail "$asks first-page fallocates for $((flushes + 1)) windows (one per device)"
[ "$punches" -eq 0 ] || fail "$punches chunks punched out of the images for $traces traces (none)"
grep -q '^BAD\|warning: elfmap: cannot' "$T/out" && fail "$(cat "$T/out")"
echo "ok: $traces traces, $((flushes + 1)) windows: $stats statx/fstat, $writes pwrite," \
    "$grows allocations ($asks of a first page), $punches punches"
