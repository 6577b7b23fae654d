#!/usr/bin/env bash
# perf archive on the machine that recorded, perf report on "another machine": a clean
# HOME and build-id cache, the image directory deleted. perf.data.tar.bz2 carries the
# elfmap images by build-id, and perf report names fib with its fib.mini line from it.
. "$(dirname "$0")/lib.sh"
require_tool perf linux-perf
require_tool bzip2 bzip2
cd "$T"
cp "$MINI/fib.mini" .
mkdir home1 home2
HOME=$T/home1 JITHERALD=elfmap JITHERALD_DIR=$T/d perf record -q -g -o perf.data \
    "$MINIJIT" fib.mini 30 > out 2> rec.err || { cat rec.err; fail "perf record"; }
[ "$(cat out)" = 832040 ]
perf buildid-list -i perf.data > ids
grep -v '^0\{40\}' ids | grep -E '^[0-9a-f]{40} .*/jit-[0-9]+-[0-9]+\.elf$' || { cat ids; fail "no build-id for the image"; }
HOME=$T/home1 perf archive perf.data > arch.out 2>&1 || { cat arch.out; fail "perf archive"; }
tar tjf perf.data.tar.bz2 | grep -E '\.build-id/[0-9a-f]{2}/[0-9a-f]{38}' > listed
id=$(grep 'jit-.*\.elf$' ids | head -1 | cut -c1-40)
grep -q "${id:0:2}/${id:2}" listed || { cat listed; fail "the image's build-id is not in the archive"; }

# The second machine: nothing of the first but perf.data and the archive.
rm -rf d home1
mkdir -p home2/.debug
tar xjf perf.data.tar.bz2 -C home2/.debug
HOME=$T/home2 perf report -i perf.data --stdio --no-children --sort dso,sym,srcline \
    2> /dev/null > rep
grep -v '^#' rep | grep -v '^$' | head -5
grep -E '[0-9.]+%.*jit-[0-9]+-[0-9]+\.elf +\[\.\] fib +fib\.mini:[0-9]+' rep ||
    fail "perf report did not name fib with its line from the archive"
echo PASS
