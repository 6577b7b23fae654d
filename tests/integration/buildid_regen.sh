#!/usr/bin/env bash
# `jitherald log FILE to-elf DIR`: the elfmap images rebuilt from the audit log carry the
# build-ids the live files had (generations included: --remove --recompile), and a perf.data
# whose image files are gone is symbolized from them: perf report names fib with its
# fib.mini line, found by build-id in a build-id cache that never saw the live files.
. "$(dirname "$0")/lib.sh"
require_tool perf linux-perf
require_tool readelf binutils
cd "$T"
cp "$MINI/fib.mini" .
JITHERALD=elfmap,auditlog JITHERALD_DIR=$T/d command perf --buildid-dir "$T/c1" record -q \
    -o perf.data "$MINIJIT" --remove --recompile fib.mini 30 > out 2> rec.err ||
    { cat rec.err; fail "perf record"; }
ids() { # DIR: "relative-path build-id" per image
    (cd "$1" && find . -name '*.elf' | sort | while read -r f; do
        echo "$f $(readelf -n "$f" | sed -n 's/.*Build ID: //p')"; done)
}
ids d > live
[ "$(wc -l < live)" -ge 2 ] || { cat live; fail "expected two generations of images"; }
"$CLI" log d/minijit-*.jhlog to-elf r > listed || fail "to-elf"
ids r > rebuilt
cat live
diff live rebuilt || fail "rebuilt images differ in path or build-id from the live ones"
grep -c . listed | grep -qx "$(wc -l < live)" || fail "to-elf did not list every image"

# The "second machine": the image files gone, a build-id cache holding only the rebuilt ones.
rm -rf d
for f in $(find r -name '*.elf'); do
    command perf --buildid-dir "$T/c2" buildid-cache -a "$f" || fail "buildid-cache -a $f"
done
command perf --buildid-dir "$T/c2" report -i perf.data --stdio --no-children \
    --sort dso,sym,srcline 2> /dev/null > rep
grep -v '^#' rep | grep -v '^$' | head -5
grep -E '[0-9.]+%.*jit-[0-9]+-[0-9]+\.elf +\[\.\] fib +fib\.mini:[0-9]+' rep ||
    fail "perf report did not name fib with its line from the rebuilt images"
# Damaged logs (the reader's fuzz corpus): to-elf fails cleanly or rebuilds what it can.
for f in "$R"/fuzz/corpus/auditlog/*; do
    rc=0
    "$CLI" log "$f" to-elf "$T/fz" > /dev/null 2>&1 || rc=$?
    [ "$rc" -le 2 ] || fail "to-elf on $f exited $rc"
done
echo PASS
