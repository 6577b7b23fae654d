#!/usr/bin/env bash
# jitdump_dwarf.sh — what perf 6.1 does with our UNWINDING_INFO under --call-graph dwarf
# (perf copies the user stack at each sample and unwinds it offline with the .eh_frame of
# each object, here the jitted-*.so that perf inject builds from our records).
# Measured, not assumed: each perf.data is injected twice, once from the dump as written
# and once from a copy with the UNWINDING_INFO records cut out (control).
#   with UNWINDING_INFO:  in some runs every sample in fib unwinds fib <- ... <- mj_call;
#                         in others none does (perf 6.1 then logs "unwind: no map for
#                         <address>" in perf script -v): the same file, the same binary.
#   without (control):    never: the unwinder stops in the first JIT frame.
# So: up to 12 recordings (about 4 in 10 fail, idle or loaded: 6 failed in a row once, under
# make test with both cores busy); PASS when one of them unwinds >= 90% of its fib samples through
# the JIT frames and every control unwinds none. docs/jitdump.md quotes the tally printed.
. "$(dirname "$0")/lib.sh"
require_tool perf linux-perf
private_perf_cache
FIB=$MINI/fib.mini
cd "$T"
export JITHERALD=jitdump JITHERALD_DIR=$T/jd

# Per sample (perf script prints one block per sample, leaf first): samples whose leaf is
# the JIT function fib, and how many of those have a chain that reaches the C caller mj_call.
chains() { # perf.data -> "N M"
    perf script -i "$1" -F ip,sym 2>/dev/null >"$1.txt"
    awk 'BEGIN { RS = "" } { split($0, l, "\n"); if (l[1] ~ / fib$/) { n++; if ($0 ~ /mj_call/) c++ } }
         END { print n + 0, c + 0 }' "$1.txt"
}
strip_unwind() { # cut UNWINDING_INFO (id 4) records out of a jitdump file, in place
    perl -e 'open F, "<", $ARGV[0] or die; binmode F; local $/; my $d = <F>; my $o = substr($d, 0, 40);
             my $p = 40; while ($p + 16 <= length $d) { my ($id, $sz) = unpack("VV", substr($d, $p, 8));
             last if $sz < 16; $o .= substr($d, $p, $sz) if $id != 4; $p += $sz }
             open G, ">", $ARGV[0] or die; binmode G; print G $o' "$1"
}

good=0 runs=0 tally=
for run in $(seq 12); do
    rm -rf jd ./*.data ./*.txt
    perf record -q -k 1 -F 2000 --call-graph dwarf,16384 -o perf.data "$MINIJIT" "$FIB" 32 \
        >run.out 2>run.err || { cat run.err; fail "perf record"; }
    grep -qx 2178309 run.out || fail "wrong fib result: $(cat run.out)"
    dump=$(ls jd/jit-*.dump)
    grep -Eq "^0x[0-9a-f]+ UNWINDING_INFO" <("$CLI" inspect "$dump") || fail "no UNWINDING_INFO written"
    perf inject --jit -i perf.data -o with.data 2>/dev/null || fail "perf inject"
    read -r n c <<<"$(chains with.data)"
    [ "$n" -ge 10 ] || fail "only $n samples in fib"

    rm -f jd/jitted-*.so
    strip_unwind "$dump"
    "$CLI" check -q "$dump" || fail "stripped dump is malformed"
    grep -Eq "^0x[0-9a-f]+ UNWINDING_INFO" <("$CLI" inspect "$dump") && fail "control still has UNWINDING_INFO"
    perf inject --jit -i perf.data -o without.data 2>/dev/null || fail "perf inject (control)"
    read -r n0 c0 <<<"$(chains without.data)"
    [ "$n0" = "$n" ] || fail "control: $n0 samples in fib, expected the same $n"
    [ "$c0" = 0 ] || fail "control: $c0 chains pass the JIT frames without UNWINDING_INFO, so the test proves nothing"

    runs=$run
    tally="$tally run $run: $c/$n with, $c0/$n0 without;"
    echo "run $run: with UNWINDING_INFO $c of $n samples in fib unwind to mj_call; without: $c0 of $n0"
    if [ $((c * 10)) -ge $((n * 9)) ]; then
        good=$((good + 1))
        break
    fi
done
[ $good -ge 1 ] || fail "in $runs runs, dwarf unwinding never passed the JIT frames:$tally"
echo "PASS: --call-graph dwarf unwinds through JIT frames with our UNWINDING_INFO (run $runs of up to 12), never without it"
