#!/usr/bin/env bash
# mkcorpus.sh — rebuilds tests/golden/corpus/, the fixed inputs of the CLI's golden tests
# (tests/integration/cli_golden.sh). The files are committed: addresses, pids and
# timestamps in them are what the goldens print, so only run this when the corpus itself
# must change, then regenerate the expected outputs and review the diff:
#     make && tests/golden/mkcorpus.sh && UPDATE=1 tests/integration/cli_golden.sh
#     git diff tests/golden
# What is in it (jitdumps are named .jitdump: .gitignore keeps *.dump out of git):
#   calls.jitdump/.map/.jhlog
#       minijit running examples/minijit/calls.mini with the jitdump, perfmap and auditlog
#       channels and --log-structs (one run); the program runs from a copy deleted
#       afterwards, so the log names an executable that is gone and `log show`/`report`
#       never read a build's DWARF. calls.mini is there for the source lines.
#   cfi.jitdump/.map
#       tests/golden/cfi_dump.c: raw CFI with every DW_CFA opcode, a long frame-pointer
#       prologue, a control character in a name, a move.
#   patch-move.jhlog, killed.jhlog, limit.jhlog
#       copies of fuzz/corpus/auditlog/ (patch, move, every attribute kind; a log cut by
#       SIGKILL; one that hit its size limit).
#   malformed: truncated.jitdump (cut inside a record), badcfa.jitdump (an unknown CFA
#       opcode in a CIE), badcie.jitdump (CIE version 2), nonl.map (no final newline),
#       warn.map (accepted with warnings), cut.jhlog (cut inside a frame), notalog.jhlog
#       (a perf map).
#   small.cgout, nosrc.cgout
#       a callgrind profile naming calls.map's functions by address (with and without a
#       pid that has files).
#   v8.jitdump, beam.jitdump, llvm.jitdump, beam.map, moar.map, mono.map (not made here)
#       what other JITs wrote, cut small with tests/producers/jd-excerpt.pl (records) or
#       sed (lines): node 20 --perf-prof (empty unwinding info, +0x40 lines, a garbage file
#       name, one real .eh_frame), erl +JPperf true from OTP 25 (CodeInfoPrologue LOADs,
#       a line table starting before the code and ending with an empty file name, 0x in
#       the map), LLVM 14 lli --jit-kind=mcjit with JITDUMPDIR (vma 0, +0x40 lines), rakudo
#       2022.12 with MVM_JIT_PERF_MAP=1, mono 6.8 --jitmap (reused addresses).
#       docs/interop.md tells what each quirk does.
# tests/golden/cases names a memory address of calls.jhlog (log-show-mem): update it too.
set -eu
R=$(cd "$(dirname "$0")/../.." && pwd)
B=$R/${BUILD:-build}
C=$R/tests/golden/corpus
T=$(mktemp -d)
pids=()
cleanup() { rm -rf "$T"; for p in "${pids[@]}"; do rm -f "/tmp/perf-$p.map"; done; }
trap cleanup EXIT
mkdir -p "$C" "$T/examples" "$T/d" "$T/c"
J=$B/jitherald

cp "$B/examples/minijit" "$T/examples/"
cp "$B/libjitherald.so.0" "$T/"
cp "$R/examples/minijit/calls.mini" "$T/"
(cd "$T" && JITHERALD=jitdump,perfmap,auditlog JITHERALD_DIR=$T/d \
    ./examples/minijit --log-structs calls.mini >/dev/null)
pid=$(basename "$T"/d/jit-*.dump .dump); pid=${pid#jit-}; pids+=("$pid")
cp "$T/d/jit-$pid.dump" "$C/calls.jitdump"
cp "/tmp/perf-$pid.map" "$C/calls.map"
cp "$T/d/minijit-$pid.jhlog" "$C/calls.jhlog"
cp "$R/examples/minijit/calls.mini" "$C/calls.mini"

cc -D_GNU_SOURCE -I"$R/include" -std=c11 -o "$T/cfi_dump" "$R/tests/golden/cfi_dump.c" \
    -L"$B" -ljitherald -Wl,-rpath,"$B"
"$T/cfi_dump" "$T/c"
pid=$(basename "$T"/c/jit-*.dump .dump); pid=${pid#jit-}; pids+=("$pid")
cp "$T/c/jit-$pid.dump" "$C/cfi.jitdump"
cp "/tmp/perf-$pid.map" "$C/cfi.map"

cp "$R/fuzz/corpus/auditlog/patch-move-attrs.jhlog" "$C/patch-move.jhlog"
cp "$R/fuzz/corpus/auditlog/killed-cut.jhlog" "$C/killed.jhlog"
cp "$R/fuzz/corpus/auditlog/limit.jhlog" "$C/limit.jhlog"

# patch one byte of a copy: file offset, byte value (decimal)
patch() {
    cp "$1" "$2"
    printf "\\$(printf %o "$4")" | dd of="$2" bs=1 seek="$3" conv=notrunc status=none
}
head -c 1000 "$C/calls.jitdump" > "$C/truncated.jitdump"
# The first UNWINDING_INFO's .eh_frame starts 40 bytes into the record; its CIE's
# version is byte 8, its first CFA instruction byte 17.
unw=$(( $("$J" inspect "$C/calls.jitdump" | awk '$2 == "UNWINDING_INFO" { print $1; exit }') + 40 ))
patch "$C/calls.jitdump" "$C/badcie.jitdump" $((unw + 8)) 2
patch "$C/calls.jitdump" "$C/badcfa.jitdump" $((unw + 17)) 63
head -c -1 "$C/calls.map" > "$C/nonl.map"
printf '1000 10 low\n1008 0 empty\n100C 20 Upper\n2000 10 alone\n3000 10 (null)\n3010 8 (null)\n' > "$C/warn.map"
head -c -30 "$C/calls.jhlog" > "$C/cut.jhlog"
cp "$C/calls.map" "$C/notalog.jhlog"

# A callgrind profile whose JIT code is named by address, as callgrind names it.
read -r a_main s_main _ < <(grep ' main$' "$C/calls.map")
read -r a_a s_a _ < <(grep ' a$' "$C/calls.map")
m=$((16#$a_main)); a=$((16#$a_a))
cg() { # pid
    printf '# callgrind format\nversion: 1\ncreator: callgrind-3.19.0\npid: %s\n' "$1"
    printf 'cmd: ./minijit calls.mini\n\npositions: instr line\nevents: Ir\nsummary: 200\n\n'
    printf 'ob=(1) /usr/bin/minijit\nfl=(1) main.c\nfn=(1) run_main\n0x401000 10 5\n'
    printf 'cob=(2) ???\ncfi=(2) ???\ncfn=(2) 0x%016x\ncalls=1 0x%x 0\n0x401004 11 150\n\n' $m $m
    printf 'ob=(2)\nfl=(2)\nfn=(2)\n0x%x 0 10\n+4 * 5\n' $m
    printf 'cfn=(3) 0x%016x\ncalls=1 0x%x 0\n+8 * 100\n' $a $a
    printf 'cfn=(4) 0x%016x'"'"'2\ncalls=1 0x%x 0\n+2 * 20\n\n' $((m + 8)) $((m + 8))
    printf 'fn=(3)\n0x%x 0 60\njump=1 +16 *\n+16 * 40\n\nfn=(4)\n0x%x 0 20\n\n' $a $((m + 8))
    printf 'totals: 200\n'
}
cg "$pid" > "$C/small.cgout"
cg 999999999 > "$C/nosrc.cgout"
chmod 644 "$C"/*
ls -l "$C"
