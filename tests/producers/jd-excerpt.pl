#!/usr/bin/perl
# jd-excerpt.pl IN OUT SPEC... — a small jitdump made of some records of a real one (the
# producers' quirks as golden and fuzz inputs): the header, then the records whose index
# (from 0) SPEC names ("3", "10-12"), in order. Nothing in a jitdump refers to an offset,
# so the excerpt is as valid as the original.
use strict; use warnings;
my ($in, $out, @spec) = @ARGV;
open my $f, '<:raw', $in or die "$in: $!"; local $/; my $d = <$f>; close $f;
my $hs = unpack('V', substr($d, 8, 4));
my @rec; my $p = $hs;
while ($p + 16 <= length $d) {
    my $sz = unpack('V', substr($d, $p + 4, 4));
    last if $sz < 16 || $p + $sz > length $d;
    push @rec, substr($d, $p, $sz); $p += $sz;
}
my $o = substr($d, 0, $hs);
for (@spec) { my ($a, $b) = /^(\d+)(?:-(\d+))?$/ or die "bad spec $_"; $o .= $rec[$_] // die "no record $_" for $a .. ($b // $a) }
open my $g, '>:raw', $out or die "$out: $!"; print $g $o; close $g;
