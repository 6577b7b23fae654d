#!/usr/bin/env bash
# Writable code pages (JH_OPT_CODE_RWX) under callgrind and memcheck: test_elfmap_rwx keeps
# its code RWX, patches it in place, writes new code into swapped pages and forks, and
# checks every result (a stale translation of file-backed code would return an old value).
# Under callgrind its functions are named by their image, as valgrind reads an image only
# from an r-x mapping (elfmap maps r-x, then makes the pages writable again).
. "$(dirname "$0")/lib.sh"
require_tool valgrind valgrind
[ -x "$B/tests/test_elfmap_rwx" ] || fail "$B/tests/test_elfmap_rwx not built"
cd "$T"
valgrind -q --tool=callgrind --callgrind-out-file=cg.out "$B/tests/test_elfmap_rwx" > out 2>&1 ||
    { cat out; fail "test_elfmap_rwx under callgrind"; }
grep -q ' 0 failed' out || { cat out; fail "test_elfmap_rwx under callgrind"; }
callgrind_annotate --threshold=100 --inclusive=yes cg.out > ann
for fn in f g h; do
    grep -E "^ *[1-9][0-9,]* .*[^a-z_]$fn \[.*/jit-[0-9]+-[0-9]+\.elf\]" ann ||
        fail "$fn is not named by its image under callgrind"
done
valgrind -q --tool=memcheck --error-exitcode=3 "$B/tests/test_elfmap_rwx" > out2 2>&1 ||
    { cat out2; fail "test_elfmap_rwx under memcheck"; }
grep -q ' 0 failed' out2

# The demo JIT with RWX code that says so (minijit --rwx-flag): named with its lines under
# callgrind, right results; natively, four threads compiling into shared RWX pages that
# elfmap maps over meanwhile agree on every result (no write of theirs lost).
cp "$MINI/fib.mini" .
export JITHERALD=elfmap JITHERALD_DIR=$T/d
valgrind -q --tool=callgrind --callgrind-out-file=cg2.out "$MINIJIT" --rwx-flag fib.mini 15 > out3
[ "$(cat out3)" = 610 ] || fail "wrong result under callgrind: $(cat out3)"
callgrind_annotate --inclusive=yes cg2.out > ann2
grep -E '^ *[0-9,]+ .*fib\.mini:fib.* \[.*/jit-[0-9]+-[0-9]+\.elf\]' ann2
grep -E '^ *[1-9][0-9,]* .*return fib\(n - 1\) \+ fib\(n - 2\)' ann2
! grep -E "\?\?\?:0x[0-9a-f]+('[0-9]+)? \[\?\?\?\]" ann2 || fail "RWX JIT code left unnamed"
for i in 1 2 3; do
    JITHERALD_DEBUG=1 "$MINIJIT" --rwx-flag --threads 4 fib.mini 20 > out4 2> err4 ||
        { cat out4 err4; fail "minijit --rwx-flag --threads 4"; }
    [ "$(grep -cx 6765 out4)" = 4 ] && [ "$(grep -c 'main returned 0$' out4)" = 4 ] ||
        { cat out4; fail "wrong results from 4 threads"; }
    grep -Eq 'elfmap: [1-9][0-9]* swaps' err4 || { cat err4; fail "no RWX page was swapped"; }
done
echo PASS
