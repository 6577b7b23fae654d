#!/usr/bin/env bash
# jitdump_dwarf.sh — what perf 6.1 does with our UNWINDING_INFO under --call-graph dwarf
# (perf copies the user stack at each sample and unwinds it offline with the .eh_frame of
# each object, here the jitted-*.so that perf inject builds from our records).
# Measured, not assumed: the same perf.data is injected twice, once from the dump as
# written and once from a copy with the UNWINDING_INFO records cut out (control).
#   with UNWINDING_INFO:    samples in fib have a chain fib <- fib <- ... <- main <- mj_call
#   without (control):      the unwinder stops in the first JIT frame: no mj_call under fib
# docs/jitdump.md quotes this result.
set -eu
: "${JH_BUILD:?run through tests/run.sh}" "${JH_ROOT:?}"
MINIJIT=$JH_BUILD/examples/minijit
FIB=$JH_ROOT/examples/minijit/fib.mini
command -v perf >/dev/null || { echo "SKIP perf not installed"; exit 77; }
[ -x "$MINIJIT" ] || { echo "FAIL: $MINIJIT not built"; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/jh-jitdump-dwarf.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
cd "$tmp"
export JITHERALD=jitdump JITHERALD_DIR=$tmp/jd

perf record -q -k 1 -F 500 --call-graph dwarf,16384 -o perf.data "$MINIJIT" "$FIB" 30 \
    >run.out 2>run.err || { cat run.err; fail "perf record"; }
grep -qx 832040 run.out || fail "wrong fib result: $(cat run.out)"
dump=$(ls jd/jit-*.dump)
grep -Eq "^0x[0-9a-f]+ UNWINDING_INFO" <("$JH_BUILD/jitherald" inspect "$dump") || fail "no UNWINDING_INFO written"

# fib's callee-ordered graph: does some chain under fib reach the C caller mj_call?
reaches_c() { # perf.data -> 0 if a chain from fib reaches mj_call
    perf report -i "$1" --stdio --no-children --sort sym -G >"$1.txt" 2>/dev/null
    grep -Eq '\[\.\] fib *$' "$1.txt" || fail "$1: fib not named"
    awk '/\[\.\] fib *$/ { f = 1; next } /^ +[0-9.]+%/ { f = 0 } f && /mj_call/ { ok = 1 } END { exit !ok }' "$1.txt"
}

perf inject --jit -i perf.data -o with.data 2>/dev/null || fail "perf inject"
reaches_c with.data || { head -60 with.data.txt; fail "with UNWINDING_INFO, dwarf unwinding does not pass the JIT frames"; }
depth=$(awk '/\[\.\] fib *$/ { f = 1; next } f && /^ +[0-9.]+%/ { exit } f && /---|--/ { next } f && $NF == "fib" { n++ } END { print n + 0 }' with.data.txt)

# Control: same samples, dump without UNWINDING_INFO.
rm -f jd/jitted-*.so
perl -e 'open F, "<", $ARGV[0] or die; binmode F; local $/; my $d = <F>; my $o = substr($d, 0, 40);
         my $p = 40; while ($p + 16 <= length $d) { my ($id, $sz) = unpack("VV", substr($d, $p, 8));
         last if $sz < 16; $o .= substr($d, $p, $sz) if $id != 4; $p += $sz }
         open G, ">", $ARGV[0] or die; binmode G; print G $o' "$dump"
"$JH_BUILD/jitherald" check -q "$dump" || fail "stripped dump is malformed"
grep -Eq "^0x[0-9a-f]+ UNWINDING_INFO" <("$JH_BUILD/jitherald" inspect "$dump") && fail "control still has UNWINDING_INFO"
perf inject --jit -i perf.data -o without.data 2>/dev/null || fail "perf inject (control)"
if reaches_c without.data; then
    head -60 without.data.txt
    fail "control: chains pass the JIT frames without UNWINDING_INFO, so the test proves nothing"
fi
echo "PASS: --call-graph dwarf unwinds through JIT frames with our UNWINDING_INFO (fib chain $depth deep to mj_call), and stops in the first JIT frame without it"
