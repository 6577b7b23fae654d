#!/usr/bin/env bash
# The LLVM adapter under callgrind: with JITHERALD=elfmap, LLJIT's code pages are re-mapped
# from ELF images, and callgrind_annotate names the JIT-compiled C functions with their
# source files (work.c and the inlined hot.h) and the image, instead of ???:0x... .
# (Without the adapter the same run shows work's cost only as ???:0x...: checked by hand,
# not here, since LLVM under valgrind takes some 15 s a run.)
. "$(dirname "$0")/lib.sh"
require_tool valgrind valgrind
JIT=$(program llvm_jit)
IR=$B/tests/programs/llvm
cd "$T"
JITHERALD=elfmap JITHERALD_DIR=$T/em valgrind -q --tool=callgrind --callgrind-out-file=cg.out \
    "$JIT" --jitlink "$IR/entry.ll" "$IR/chain.ll" "$IR/work.ll" -- jit_entry 300000 > out 2>err ||
    { cat out err; fail "callgrind run"; }
grep -q '^result ' out || fail "the JIT did not run: $(cat out err)"
callgrind_annotate cg.out > ann 2>&1
grep -E ':(work|middle|leaf|jit_entry)( |$)' ann || true
grep -Eq '^ *[0-9,]+ .*/work\.c:work \[.*/jit-[0-9]+-[0-9]+\.elf\]' ann || fail "work.c:work not named"
# (callgrind_annotate leaves out the object when it is the one of the line before)
grep -Eq '^ *[0-9,]+ .*/hot\.h:work( \[.*/jit-[0-9]+-[0-9]+\.elf\])?$' ann || fail "hot.h:work (inlined) not named"
echo "PASS callgrind_annotate names work with work.c and hot.h"
