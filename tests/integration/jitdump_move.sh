#!/usr/bin/env bash
# jitdump_move.sh — jh_code_move through perf: a hand-assembled spin loop
# (tests/programs/jitdump_move.c) runs at A, is copied to B and announced moved (MOVE record), its old copy overwritten with int3, then
# runs at B. After perf inject --jit, samples at both addresses must carry its name (perf
# 6.1 maps B to the same jitted-<pid>-<index>.so). Control: without the MOVE record (cut out
# of the dump) the samples at B have no name.
. "$(dirname "$0")/lib.sh"
require_tool perf linux-perf
private_perf_cache
MOVE=$(program jitdump_move)
cd "$T"
JITHERALD=jitdump JITHERALD_DIR=$T/jd perf record -q -k 1 -o perf.data "$MOVE" >run.out 2>run.err ||
    { cat run.err; fail "perf record"; }
read -r a b <run.out
dump=$(ls jd/jit-*.dump)
"$CLI" check -q "$dump" || fail "jitherald check"
"$CLI" inspect "$dump" | grep -Eq "^0x[0-9a-f]+ MOVE .* 0x$a -> 0x$b" || fail "no MOVE record $a -> $b"

named() { # perf.data address-prefix -> count of samples there named spin_moved, and total
    perf script -i "$1" -F ip,sym 2>/dev/null | awk -v p="$2" '
        { ip = $1; sub(/^0+/, "", ip) }
        index(ip, p) == 1 { n++; if ($2 ~ /^spin_moved/) c++ } END { print n + 0, c + 0 }'
}
perf inject --jit -i perf.data -o perf.jit.data 2>/dev/null || fail "perf inject"
# A and B are page-aligned and 512 KiB apart: their page numbers tell the samples apart
read -r na ca <<<"$(named perf.jit.data "${a%???}")"
read -r nb cb <<<"$(named perf.jit.data "${b%???}")"
echo "at A ($a): $ca of $na samples named; at B ($b): $cb of $nb named"
[ "$na" -ge 10 ] && [ "$nb" -ge 10 ] || fail "too few samples at A ($na) or B ($nb)"
[ $((ca * 10)) -ge $((na * 9)) ] || fail "samples at A not named"
[ $((cb * 10)) -ge $((nb * 9)) ] || fail "samples at B (after MOVE) not named"

# Control: the same recording without the MOVE record (id 1).
rm -f jd/jitted-*.so
perl -e 'open F, "<", $ARGV[0] or die; binmode F; local $/; my $d = <F>; my $o = substr($d, 0, 40);
         my $p = 40; while ($p + 16 <= length $d) { my ($id, $sz) = unpack("VV", substr($d, $p, 8));
         last if $sz < 16; $o .= substr($d, $p, $sz) if $id != 1; $p += $sz }
         open G, ">", $ARGV[0] or die; binmode G; print G $o' "$dump"
perf inject --jit -i perf.data -o nomove.data 2>/dev/null || fail "perf inject (control)"
read -r nb0 cb0 <<<"$(named nomove.data "${b%???}")"
[ "$cb0" = 0 ] || fail "control: samples at B named without the MOVE record ($cb0 of $nb0)"
echo "PASS: after jh_code_move perf names the code at its new address ($cb/$nb), and only thanks to MOVE (control 0/$nb0)"
