#!/usr/bin/env bash
# jitdump_nomap.sh — where the jitdump file cannot be mapped shared and writable (a FUSE or
# network file system: tests/programs/no_shared_map.so refuses exactly that, with ENODEV),
# the channel writes each record instead (src/channels/jitdump.c, file_write):
#   1. perf inject --jit makes one jitted-<pid>-<index>.so per function, names included,
#      `jitherald check` accepts the file, and the records were written, not stored (the
#      refusals counted, a pwrite per function);
#   2. under a file-size limit (ulimit -f) the program is not killed by SIGXFSZ: the
#      channel says once that it stopped, the program's own result is right, the perf map
#      (another channel) still names every function, and the dump is cut at its last
#      complete record (`jitherald check` accepts it).
. "$(dirname "$0")/lib.sh"
require_tool perf linux-perf
require_tool strace strace
private_perf_cache
SHIM=$(program no_shared_map.so)
cd "$T"
many_mini many.mini
sed -i 's/^  return r$/  print(r)\n  return 0/' many.mini      # main prints its sum, 20100
export JITHERALD_DIR=$T/jd

# 1. every function, written
JITHERALD=jitdump perf record -q -k 1 -o perf.data \
    strace -f -qq -e trace=pwrite64,pwritev -o run.strace \
    env LD_PRELOAD="$SHIM" "$MINIJIT" many.mini >run.out 2>run.err || { cat run.err; fail "minijit"; }
grep -qx 20100 run.out || { cat run.out run.err; fail "minijit's result"; }
refused=$(sed -n 's/^no_shared_map: \([0-9]*\) refused$/\1/p' run.err)
[ "${refused:-0}" -ge 1 ] || { cat run.err; fail "the dump was never refused a shared mapping: the written path is untested"; }
writes=$(grep -c 'pwrite' run.strace || true)
[ "$writes" -ge 201 ] || fail "$writes pwrites for 201 functions: the records were not written"
dump=$(ls jd/jit-*.dump)
"$CLI" check "$dump" >check.out 2>&1 || { cat check.out; fail "jitherald check refuses the written dump"; }
grep -Eq ' 201 LOAD' check.out || { cat check.out; fail "not every function's LOAD is in the written dump"; }
perf inject --jit -i perf.data -o perf.jit.data 2>inject.err || { cat inject.err; fail "perf inject"; }
n=$(find jd -name 'jitted-*.so' | wc -l)
[ "$n" = 201 ] || fail "perf inject made $n jitted-*.so files, not one per function (201)"
for f in f0 f199 main; do
    grep -l "$f" jd/jitted-*.so >/dev/null || fail "no jitted .so names $f"
done
echo "ok: $refused shared mappings refused, $writes pwrites, 201 functions in the dump, perf inject made 201 .so files"

# 2. the same under a file-size limit: 16 KiB hold some functions, not 201
rm -rf jd
st=0
(ulimit -f 16; JITHERALD=jitdump,perfmap LD_PRELOAD="$SHIM" exec "$MINIJIT" many.mini) \
    >lim.out 2>lim.err || st=$?
[ "$st" = 0 ] || { cat lim.err; fail "minijit under ulimit -f ended with status $st (SIGXFSZ is 153)"; }
grep -qx 20100 lim.out || { cat lim.out lim.err; fail "minijit's result under the limit"; }
grep -q 'refused' lim.err && grep -Eq '^no_shared_map: [1-9]' lim.err ||
    { cat lim.err; fail "the limited run did not take the written path"; }
said=$(grep -ci 'jitdump' lim.err || true)
[ "$said" = 1 ] || { cat lim.err; fail "the jitdump channel's failure said $said times, not once"; }
dump=$(ls jd/jit-*.dump)
size=$(stat -c %s "$dump")
[ "$size" -le 16384 ] || fail "the dump is $size bytes, over the 16 KiB limit"
"$CLI" check "$dump" >lcheck.out 2>&1 || { cat lcheck.out; fail "jitherald check refuses the cut dump"; }
! grep -q '(truncated)' lcheck.out || { cat lcheck.out; fail "the dump ends in a cut record: not cut back to its last complete one"; }
loads=$(sed -n 's/.* \([0-9][0-9]*\) LOAD.*/\1/p' lcheck.out | head -1)
[ "${loads:-0}" -ge 1 ] && [ "$loads" -lt 201 ] || { cat lcheck.out; fail "the cut dump holds ${loads:-no} LOADs"; }
pid=${dump##*/jit-}; pid=${pid%.dump}
map=/tmp/perf-$pid.map
at_exit "rm -f $map"
for f in f0 f199 main; do
    grep -Eq " $f *\$" "$map" || fail "the perf map does not name $f: the other channel did not carry on"
done
echo "PASS: without a shared mapping the records are written (perf inject: 201 .so); under ulimit -f 16 the program lives, the channel says so once, the dump is cut at $loads complete LOADs and the perf map names all 201"
