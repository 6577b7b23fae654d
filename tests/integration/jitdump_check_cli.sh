#!/usr/bin/env bash
# jitdump_check_cli.sh — `jitherald check` / `inspect` as a user meets them: files the demo
# JIT really wrote (a jitdump and a perf map) pass and are decoded; files broken the way
# writers break them fail with exit 1 and a message naming the offset or line and the
# problem; usage and I/O errors exit 2.
. "$(dirname "$0")/lib.sh"
FIB=$MINI/fib.mini
cd "$T"

JITHERALD=perfmap,jitdump JITHERALD_DIR=$T/jd "$MINIJIT" "$FIB" 20 >run.out || fail "minijit"
grep -qx 6765 run.out || fail "wrong result"
dump=$(ls jd/jit-*.dump)
pid=${dump##*/jit-}; pid=${pid%.dump}
map=/tmp/perf-$pid.map
at_exit "rm -f $map"
cp "$map" good.map
cp "$dump" good.dump

# 1. the real files
"$CLI" check good.dump >out 2>err || { cat out err; fail "check refuses a real dump"; }
grep -q 'ok: jitdump, 7 records: 2 LOAD, 2 DEBUG_INFO, 2 UNWINDING_INFO, 0 MOVE, 1 CLOSE' out || { cat out; fail "summary"; }
# jitherald's own files follow the specification to the letter: no quirk, even in --strict
"$CLI" check --strict good.dump >out 2>err || { cat out err; fail "our dump has quirks"; }
[ ! -s err ] || { cat err; fail "warnings on our own dump"; }
"$CLI" check --strict good.map >out 2>err || { cat out err; fail "our perf map has quirks"; }
"$CLI" check good.map >out 2>err || { cat out err; fail "check refuses a real perf map"; }
grep -q 'ok: perf map, 2 lines' out || { cat out; fail "perf map summary"; }
"$CLI" inspect good.dump >out || fail "inspect dump"
grep -Eq '^0x[0-9a-f]+ LOAD .* fib$' out && grep -Eq '^0x[0-9a-f]+ LOAD .* main$' out || { cat out; fail "inspect names"; }
grep -q 'fib.mini:5$' out || { cat out; fail "inspect line table"; }
grep -q 'cfa=rbp;' out || { cat out; fail "inspect unwind rules"; }
"$CLI" inspect good.map | grep -q ' fib$' || fail "inspect perf map"

# 2. broken files: expect exit 1 and a message
expect() { # file regex
    local rc=0
    "$CLI" check "$1" >out 2>&1 || rc=$?
    [ $rc = 1 ] || { cat out; fail "$1: exit $rc, want 1"; }
    grep -Eq "$2" out || { cat out; fail "$1: message does not match /$2/"; }
    echo "ok: $1: $(head -1 out | sed "s|^jitherald check: $1: ||")"
}
# perl helpers over the records of good.dump
edit() { # out-file perl-code-on-$d-with-@r   (@r: [offset, id, size] per record)
    perl -e 'open F, "<", "good.dump" or die; binmode F; local $/; our $d = <F>; our @r; my $p = 40;
             while ($p + 16 <= length $d) { my ($id, $sz) = unpack("VV", substr($d, $p, 8));
             push @r, [$p, $id, $sz]; $p += $sz } '"$2"';
             open G, ">", $ARGV[0] or die; binmode G; print G $d' "$1"
}
size=$(stat -c %s good.dump)
head -c $((size - 30)) good.dump >cut.dump
# cut in its last LOAD, as a writer that stopped leaves it: a warning naming what perf can
# use (tests/integration/cli_check_cut.sh has more)
"$CLI" check cut.dump >out 2>&1 || { cat out; fail "cut.dump: a dump cut in its last record refused"; }
grep -q 'is cut after [0-9]*: 3 records (1 LOAD) are usable.*(truncated)$' out || { cat out; fail "cut.dump: warning"; }
edit flag.dump 'substr($d, 32, 1) = chr(2)'
expect flag.dump 'offset 0x20: unknown flag bits 0x2: perf rejects the whole file'
edit ver.dump 'substr($d, 4, 1) = chr(2)'
expect ver.dump 'offset 0x4: version 2: perf 6.1 reads version 1 only'
# the same function LOADed again under its index: a patch's refresh, fine
edit again.dump 'my ($l) = grep { $_->[1] == 0 } @r; $d .= substr($d, $l->[0], $l->[2])'
"$CLI" check again.dump || fail "a LOAD again under its own index was refused"
# an index LOADed again for code somewhere else: that would rename or hide the first
edit dup.dump 'my ($l) = grep { $_->[1] == 0 } @r; my $c = substr($d, $l->[0], $l->[2]);
               substr($c, 32, 8) = pack("Q<", unpack("Q<", substr($c, 32, 8)) + 0x1000); $d .= $c'
expect dup.dump 'LOAD reuses code_index 0 at 0x[0-9a-f]+\+0x[0-9a-f]+, but that index is code at .*: perf would overwrite jitted-[0-9]+-0.so'
edit rel.dump 'my ($g) = grep { $_->[1] == 2 } @r; my $a = unpack("Q<", substr($d, $g->[0] + 32, 8));
               substr($d, $g->[0] + 32, 8) = pack("Q<", 0)'
# Line tables perf takes but gets wrong: a warning, and an error with --strict
quirk() { # file regex
    "$CLI" check "$1" >out 2>err || { cat out err; fail "$1 refused"; }
    grep -Eq "$2" err || { cat err; fail "$1: warning does not match /$2/"; }
    ! "$CLI" check -q --strict "$1" >/dev/null 2>&1 || fail "$1: --strict accepts it"
    echo "ok: $1: $(head -1 err)"
}
quirk rel.dump 'DEBUG_INFO entry 0 at 0x0 is outside the code .*absolute.*\(line-outside-code\)$'
edit back.dump 'my ($g) = grep { $_->[1] == 2 } @r; my $e = $g->[0] + 32;
                my $a = unpack("Q<", substr($d, $e, 8)); my $e1 = index($d, "\0", $e + 16) + 1;
                substr($d, $e, 8) = pack("Q<", $a + 4); substr($d, $e1, 8) = pack("Q<", $a + 2)'
quirk back.dump 'DEBUG_INFO entry 1 goes backwards: .*\(line-backwards\)$'
edit order.dump 'my ($g) = grep { $_->[1] == 2 } @r; my ($u) = grep { $_->[1] == 4 } @r;
                 my $gs = substr($d, $g->[0], $g->[2]); my $us = substr($d, $u->[0], $u->[2]);
                 substr($d, $g->[0], $g->[2] + $u->[2]) = $us . $gs'
# perf applies whatever came last to the next LOAD: the order of the two does not matter
"$CLI" check --strict order.dump >out 2>&1 || { cat out; fail "UNWINDING_INFO, DEBUG_INFO, LOAD refused"; }
# the FDE's pc_range (record + 40 fixed bytes + 24-byte CIE + 12) one byte too long
edit fde.dump 'my ($u) = grep { $_->[1] == 4 } @r; my $o = $u->[0] + 40 + 24 + 12;
               substr($d, $o, 4) = pack("V", unpack("V", substr($d, $o, 4)) + 1)'
expect fde.dump 'UNWINDING_INFO for the LOAD at 0x[0-9a-f]+: .eh_frame\+0x18: FDE covers 0x80\.\.0x[0-9a-f]+ but perf puts the code at 0x80\.\.'
# 0x before the numbers (Erlang): perf 6.1 reads it, so it is a warning; --strict refuses it
sed 's/^/0x/' good.map >hex.map
"$CLI" check hex.map >out 2>err || { cat out err; fail "0x map refused"; }
grep -q '^jitherald check: hex.map: warning: line 1: 0x before the numbers .*blazesym reject it \[2 lines\]' err || { cat err; fail "0x warning"; }
rc=0; "$CLI" check --strict hex.map >out 2>&1 || rc=$?
[ $rc = 1 ] && grep -q 'hex.map: 0x prefixes: the perf map format has bare hex numbers' out || { cat out; fail "--strict 0x: exit $rc"; }
printf '%s' "$(cat good.map)" >nonl.map
expect nonl.map 'line 2: no newline at the end of the file: perf drops the last character'
printf '7f00 10\n' >noname.map
expect noname.map 'line 1: a space and a name must follow the size'

# 3. usage and I/O errors: exit 2
rc=0; "$CLI" check >/dev/null 2>&1 || rc=$?; [ $rc = 2 ] || fail "no argument: exit $rc"
rc=0; "$CLI" check "$T/nope" >/dev/null 2>&1 || rc=$?; [ $rc = 2 ] || fail "missing file: exit $rc"
echo "PASS: real files accepted (also --strict) and decoded; 8 kinds of broken file refused with a precise message; 4 quirks accepted"
