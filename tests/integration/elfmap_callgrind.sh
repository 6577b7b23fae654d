#!/usr/bin/env bash
# JITHERALD=elfmap under callgrind and cachegrind: the demo JIT's functions show up with
# their source file, lines and image file, with no perf map, no jitdump and no rewriting.
# Also across removal and re-use of the same addresses (--remove --recompile), where
# valgrind must be told to drop its translations of file-backed code.
. "$(dirname "$0")/lib.sh"
require_tool valgrind valgrind
cd "$T"
cp "$MINI/fib.mini" .
export JITHERALD=elfmap JITHERALD_DIR=$T/d

valgrind -q --tool=callgrind --callgrind-out-file=cg.out "$MINIJIT" fib.mini 15 > out
[ "$(cat out)" = 610 ] || fail "wrong result under callgrind: $(cat out)"
ls "$T"/d/jit-*.elf
callgrind_annotate --inclusive=yes cg.out > ann
grep -E '^ *[0-9,]+ .*fib\.mini:fib.* \[.*/jit-[0-9]+-[0-9]+\.elf\]' ann
grep -E '^ *[0-9,]+ .*fib\.mini:main \[.*/jit-[0-9]+-[0-9]+\.elf\]' ann
# JIT code named by address means a page was not swapped.
! grep -E "\?\?\?:0x[0-9a-f]+('[0-9]+)? \[\?\?\?\]" ann || fail "JIT code left unnamed"
# Line-level costs, on the lines of fib's body in the auto-annotated fib.mini.
grep -E '^ *[1-9][0-9,]* .*if n < 2 \{ return n \}' ann
grep -E '^ *[1-9][0-9,]* .*return fib\(n - 1\) \+ fib\(n - 2\)' ann

# Addresses freed and re-used: both runs right, and named.
valgrind -q --tool=callgrind --callgrind-out-file=cg2.out "$MINIJIT" --remove --recompile \
    fib.mini 12 > out2
[ "$(sort -u out2)" = 144 ] || fail "wrong results with --recompile: $(cat out2)"
callgrind_annotate cg2.out | grep -E 'fib\.mini:fib.*jit-[0-9]+-[0-9]+\.elf'

valgrind -q --tool=cachegrind --cachegrind-out-file=cachegrind.out "$MINIJIT" fib.mini 15 > out3
[ "$(cat out3)" = 610 ]
cg_annotate cachegrind.out > cann
grep -E '^ *[1-9][0-9,]* .*fib\.mini:fib' cann
grep -E '^ *[1-9][0-9,]* .*if n < 2 \{ return n \}' cann

# An absolute source path is named as it is, not as ".//abs/path" (the .debug_line file
# entry must put an absolute name's directory in include_directories).
valgrind -q --tool=callgrind --callgrind-out-file=cg3.out "$MINIJIT" "$T/fib.mini" 10 > out3
callgrind_annotate cg3.out > ann3
# (fib'2: callgrind's name for the recursive calls, which may be all it lists of fib)
grep -E "fib\.mini:fib('[0-9]+)? .*jit-[0-9]+-[0-9]+\.elf" ann3
grep -F "$T/fib.mini" ann3
! grep -E '\.//[^ ]*fib\.mini' ann3 || fail "absolute source path shown with a ./ prefix"
echo PASS
