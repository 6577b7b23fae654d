#!/usr/bin/env bash
# The LLVM adapter under perf: LLJIT runs work() (tests/programs/llvm/work.c, with hot.h's
# mix() inlined into it) and `perf report --sort sym,srcline` names it with its lines,
# from both files:
#   jitdump + perf inject (the ORC plugin, JITLink), and the dump passes `jitherald check`;
#   elfmap, with no inject (the listener, RuntimeDyld);
#   --call-graph dwarf (jitdump's UNWINDING_INFO, from the object's .eh_frame): samples in
#   the frameless work() unwind through jit_entry to the host's main. perf 6.1 does that in
#   some recordings and not in others (docs/jitdump.md), so up to 6 are made.
# Control: without the adapter no sample is named work.
. "$(dirname "$0")/lib.sh"
require_tool perf linux-perf
private_perf_cache
JIT=$(program llvm_jit)
IR=$B/tests/programs/llvm
RUN=("$IR/entry.ll" "$IR/chain.ll" "$IR/work.ll" -- jit_entry 100000000)
# For the line checks, three times the work (~0.6 s) sampled at 10 kHz (~6,000 samples in
# work): hot.h's rows hold about 70% of them (its four dependent multiplies; with one,
# strength-reduced to three instructions, a loaded machine gave it 0.01-1.5%, and some
# runs none), work.c's the rest.
LINES=("$IR/entry.ll" "$IR/chain.ll" "$IR/work.ll" -- jit_entry 300000000)
cd "$T"

# "work FILE:LINE" rows of a perf report, and the share of work's samples they hold
srclines() { # perf.data
    perf report -i "$1" --stdio --no-children --sort sym,srcline 2>/dev/null |
        awk '$3 == "work" { print $4 }' | sort -u
}
check_lines() { # perf.data what
    srclines "$1" > "$1.lines"
    echo "$2: $(tr '\n' ' ' < "$1.lines")"
    grep -Eq '^work\.c:[0-9]+$' "$1.lines" || fail "$2: no work.c:LINE for work"
    grep -Eq '^hot\.h:[0-9]+$' "$1.lines" || fail "$2: no hot.h:LINE for work (the inlined header)"
}

# 1. jitdump + inject, through the ORC plugin
JITHERALD=jitdump JITHERALD_DIR=$T/jd perf record -q -k 1 -F 10000 -o jd.data "$JIT" --jitlink \
    "${LINES[@]}" > out 2>err || { cat err; fail "perf record"; }
grep -q '^result ' out || fail "the JIT did not run: $(cat out err)"
"$CLI" check "$T"/jd/jit-*.dump || fail "jitherald check refuses the dump"
perf inject --jit -i jd.data -o jd.inj.data 2>/dev/null || fail "perf inject"
check_lines jd.inj.data "jitdump + inject (JITLink)"
echo "PASS jitdump: work named with work.c and hot.h lines"

# 2. elfmap, no inject, through the listener
JITHERALD=elfmap JITHERALD_DIR=$T/em perf record -q -F 10000 -o em.data "$JIT" --rtdyld \
    "${LINES[@]}" > out 2>err || { cat err; fail "perf record"; }
check_lines em.data "elfmap (RuntimeDyld)"
echo "PASS elfmap: work named with work.c and hot.h lines, no inject"

# control: the same without the adapter
perf record -q -F 2000 -o none.data "$JIT" --jitlink --no-jitherald "${RUN[@]}" > out 2>&1 ||
    fail "perf record (control)"
! perf report -i none.data --stdio --no-children --sort sym 2>/dev/null | grep -qw work ||
    fail "control: perf names work without the adapter"
echo "PASS control: without the adapter nothing is named work"

# 3. --call-graph dwarf through the frameless work() (jitdump's UNWINDING_INFO)
chains() { # perf.data -> "N M": samples whose leaf is work, and those reaching main via jit_entry
    perf script -i "$1" -F ip,sym 2>/dev/null |
        awk 'BEGIN { RS = "" } { split($0, l, "\n"); if (l[1] ~ / work$/) { n++; if ($0 ~ / jit_entry\n/ && $0 ~ / main\n/) c++ } }
             END { print n + 0, c + 0 }'
}
tally=
for run in 1 2 3 4 5 6; do
    rm -rf "$T/dw" dw.data dw.inj.data
    JITHERALD=jitdump JITHERALD_DIR=$T/dw perf record -q -k 1 -F 2000 --call-graph dwarf,16384 \
        -o dw.data "$JIT" --jitlink "${RUN[@]}" > out 2>err || { cat err; fail "perf record (dwarf)"; }
    perf inject --jit -i dw.data -o dw.inj.data 2>/dev/null || fail "perf inject (dwarf)"
    read -r n c <<<"$(chains dw.inj.data)"
    [ "$n" -ge 10 ] || fail "only $n samples in work"
    tally="$tally run $run: $c/$n;"
    echo "run $run: $c of $n samples in work unwind through jit_entry to main"
    [ $((c * 10)) -ge $((n * 9)) ] && { echo "PASS --call-graph dwarf (run $run of up to 6)"; exit 0; }
done
fail "--call-graph dwarf never unwound work to main:$tally"
