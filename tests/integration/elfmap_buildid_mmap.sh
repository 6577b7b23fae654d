#!/usr/bin/env bash
# elfmap_buildid_mmap.sh — issue 29's identity rule, with perf record --buildid-mmap: the
# kernel reads each image's build-id from the file's first page at every executable mmap
# and perf puts it in the MMAP2 event; perf report later finds the image by that id alone
# (here through its build-id cache, the image directory gone). perf 6.1 keeps the first id
# it sees for a path, so an image file must never change once mapped:
#   JITHERALD_ELFMAP_FREEZE=1: every id an MMAP2 event carries for a path is the id the file
#     at that path has at the end (no image presents an old id with new contents), perf
#     buildid-list lists it, and perf report names fib through the cache with the images
#     deleted.
#   control, the default (images grow in place): the demo's image was mapped at its first
#     function and grew by the second, so the id perf recorded is not the file's, and perf
#     report names nothing. If it did, this test would prove nothing.
# Also the bound on an image's apparent size (docs/fleet.md): one page + 3 MiB of code span +
# 1 MiB of gap + its metadata's chunks, here under 5 MiB (it was 67 MiB + metadata).
. "$(dirname "$0")/lib.sh"
require_tool perf linux-perf
require_tool readelf binutils
private_perf_cache
cd "$T"

record() { # NAME FREEZE
    rm -rf "$1"
    JITHERALD=elfmap JITHERALD_DIR=$T/$1 JITHERALD_ELFMAP_FREEZE=$2 perf record -q --buildid-mmap \
        -F 2000 -g -o "$1.data" "$MINIJIT" --repeat 4 "$MINI/fib.mini" 27 >"$1.out" 2>"$1.err" || {
        grep -qi 'build.id' "$1.err" && ! grep -q 196418 "$1.out" &&
            { cat "$1.err"; skip "perf or the kernel cannot record build-ids in mmap events"; }
        cat "$1.err"; fail "perf record ($1)"; }
    [ "$(tail -1 "$1.out")" = 196418 ] || fail "$1: wrong result"
    perf script -i "$1.data" --show-mmap-events 2>/dev/null |
        sed -n 's/.*PERF_RECORD_MMAP2.* <\([0-9a-f]*\)>\]: r-xp \(.*jit-[0-9]*-[0-9]*\.elf\)$/\2 \1/p' |
        sort -u >"$1.events"
    [ -s "$1.events" ] || { perf script -i "$1.data" --show-mmap-events | grep MMAP | head; fail "$1: no MMAP2 event with a build-id for an image"; }
}
file_id() { readelf -n "$1" | sed -n 's/.*Build ID: //p'; }
report() { # NAME -> perf report of NAME.data with its images gone, found through the cache
    local f
    for f in $(find "$1" -name 'jit-*.elf'); do perf buildid-cache -a "$f"; done
    mv "$1" "$1.gone"
    perf report -i "$1.data" --stdio --no-children --sort dso,sym 2>/dev/null | grep -v '^#' |
        grep . >"$1.rep" || true
    mv "$1.gone" "$1"
}

record frozen 1
stale=0
while read -r path id; do
    now=$(file_id "$path")
    echo "frozen: $path mapped with $id, now $now"
    [ "$now" = "$id" ] || stale=$((stale + 1))
done <frozen.events
[ "$stale" = 0 ] || fail "$stale image(s) mapped with an id they no longer carry"
[ "$(cut -d' ' -f1 frozen.events | sort | uniq -d)" = "" ] || fail "one path with two ids"
perf buildid-list -i frozen.data >frozen.ids
grep -F -f <(awk '{ print $2 " " $1 }' frozen.events) frozen.ids ||
    { cat frozen.ids; fail "perf buildid-list does not list the images' ids"; }
report frozen
grep -E '[0-9.]+% +jit-[0-9]+-[0-9]+\.elf +\[\.\] fib$' frozen.rep ||
    { cat frozen.rep | head; fail "perf report did not name fib through the recorded id"; }

record inplace 0
read -r path id <inplace.events
now=$(file_id "$path")
echo "in place: $path mapped with $id, now $now"
[ "$now" != "$id" ] || fail "control: the image did not grow after it was mapped (this test proves nothing)"
report inplace
! grep -E '\] fib$' inplace.rep || fail "control: perf named fib with a stale id"

# apparent size and disk use of the images
for f in $(find frozen inplace -name 'jit-*.elf'); do
    size=$(stat -c %s "$f")
    echo "$f: $size bytes apparent, $(du -k "$f" | cut -f1) KiB on disk"
    [ "$size" -le $((5 << 20)) ] || fail "$f: $size bytes apparent, over the 5 MiB bound"
done
echo "PASS: perf record --buildid-mmap names JIT code through the ids it recorded (JITHERALD_ELFMAP_FREEZE=1); images grown in place present a new id"
