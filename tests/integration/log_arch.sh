#!/usr/bin/env bash
# `jitherald log FILE to-elf DIR` and `to-jitdump` write files for the architecture the log
# recorded (its header's "arch"), not the host's. An arm64 log (minijit's, its header's arch
# rewritten to "aarch64": neither command reads the code bytes, so x86-64 ones do) gives
# images that readelf calls AArch64 (e_machine 183), whose .debug_frame has arm64's CIE
# (return address column 30, CFA = sp+0) and FDEs that save the frame record in x29/x30,
# and a jitdump whose header says e_machine 183 and whose CFI `jitherald inspect` prints
# with arm64's registers; the host's log, beside it, still gives x86-64 ones. A log of an
# architecture jitherald does not know is refused, naming it, and leaves no file behind.
. "$(dirname "$0")/lib.sh"
require_tool readelf binutils
require_tool perl perl
cd "$T"
JITHERALD=auditlog JITHERALD_DIR=$T/d "$MINIJIT" "$MINI/fib.mini" 20 > out 2> err ||
    { cat err; fail "minijit"; }
log=$(echo d/minijit-*.jhlog)
[ -f "$log" ] || fail "no audit log in d/"

with_arch() { # LOG ARCH OUT: LOG with the arch string of its header (the first frame) replaced
    perl -e '
        my ($in, $arch, $out) = @ARGV;
        open(my $f, "<:raw", $in) or die "$in: $!\n";
        my $d = do { local $/; <$f> };
        my $len = unpack("N", substr($d, 1, 4));        # frame: 0xce, big-endian length, map
        my $hdr = substr($d, 5, $len);
        my $at = index($hdr, "\xa4arch");              # the key "arch" as a msgpack fixstr
        my $c = $at < 0 ? 0 : ord(substr($hdr, $at + 5, 1));
        die "no arch string in the header of $in\n" if ($c & 0xe0) != 0xa0;
        substr($hdr, $at + 5, 1 + ($c & 31)) = chr(0xa0 | length $arch) . $arch;
        open(my $o, ">:raw", $out) or die "$out: $!\n";
        print $o "\xce", pack("N", length $hdr), $hdr, substr($d, 5 + $len);' "$1" "$2" "$3"
}
with_arch "$log" aarch64 a64.jhlog
with_arch "$log" riscv64 rv.jhlog
"$CLI" log a64.jhlog info | head -1 | grep -q ', aarch64$' ||
    { "$CLI" log a64.jhlog info; fail "the rewritten log does not read as an aarch64 one"; }

# images: e_machine and CFI of the log's architecture (the host's log as the control)
"$CLI" log a64.jhlog to-elf a64 > a64.list || fail "to-elf of the arm64 log"
"$CLI" log "$log" to-elf host > host.list || fail "to-elf of the host's log"
[ -s a64.list ] || fail "to-elf listed no image for the arm64 log"
for f in $(find a64 -name '*.elf'); do
    readelf -h "$f" > h.txt
    grep -Eq 'Machine: +AArch64' h.txt || { cat h.txt; fail "$f: not an AArch64 image"; }
    readelf --debug-dump=frames "$f" > fr.txt 2>&1
    cat fr.txt
    grep -q 'Return address column: 30' fr.txt || fail "$f: the CIE's return address is not x30"
    grep -q 'DW_CFA_def_cfa: r31 (sp) ofs 0' fr.txt || fail "$f: the CIE's CFA is not sp+0"
    grep -q 'DW_CFA_offset: r29 (x29) at cfa-16' fr.txt &&
        grep -q 'DW_CFA_offset: r30 (x30) at cfa-8' fr.txt &&
        grep -q 'DW_CFA_def_cfa_register: r29 (x29)' fr.txt ||
        fail "$f: the FDEs do not describe the x29/x30 frame record"
    ! grep -q 'Return address column: 16' fr.txt || fail "$f: an x86-64 CIE in an arm64 image"
done
for f in $(find host -name '*.elf'); do
    readelf -h "$f" | grep -Eq 'Machine: +Advanced Micro Devices X86-64' ||
        fail "$f: the host's log no longer gives x86-64 images"
    readelf --debug-dump=frames "$f" | grep -q 'Return address column: 16' ||
        fail "$f: the host's log no longer gives x86-64 CIEs"
done

# jitdump: the header's e_machine is the log's
"$CLI" log a64.jhlog to-jitdump -o a64.dump || fail "to-jitdump of the arm64 log"
"$CLI" inspect a64.dump > a64.inspect || { cat a64.inspect; fail "jitherald inspect a64.dump"; }
head -1 a64.inspect
head -1 a64.inspect | grep -q 'elf_mach 183 (arm64)' || fail "the jitdump's e_machine is not arm64's"
# its UNWINDING_INFO, as the reader prints it with arm64's register names
grep -m1 'CIE @' a64.inspect
grep -q 'CIE @.* ra x30 .*cfa=sp+0;' a64.inspect || fail "the jitdump's CIE is not arm64's"
grep -q 'FDE @.* x29@cfa-16; x30@cfa-8; .*cfa=x29;' a64.inspect ||
    fail "the jitdump's FDEs do not describe the x29/x30 frame record"

# an architecture jitherald does not know: refused, named, nothing written
for cmd in "to-elf rv" "to-jitdump -o rv.dump"; do
    rc=0
    "$CLI" log rv.jhlog $cmd > rv.out 2> rv.err || rc=$?
    cat rv.err
    [ $rc = 1 ] || fail "$cmd of a riscv64 log exited $rc, not 1"
    grep -q 'riscv64' rv.err || fail "$cmd of a riscv64 log did not name the architecture"
    [ ! -e rv ] && [ ! -e rv.dump ] || fail "$cmd of a riscv64 log left a file behind"
done
echo PASS
