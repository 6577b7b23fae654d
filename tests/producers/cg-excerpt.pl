#!/usr/bin/perl
# cg-excerpt.pl MAP PROFILE N OUT — a fuzz seed for fuzz/fuzz_callgrind.c cut from a real
# run: the lines of the perf map MAP that cover the JIT code the excerpt names, a NUL, then
# the header of the callgrind profile PROFILE and its first N blocks whose function or
# callee is JIT code (named by an address in MAP). PROFILE must be written with
# --compress-strings=no, so that a block does not depend on names defined in blocks left
# out; each kept block gets its ob= and fl= lines again. 0x prefixes in MAP (Erlang) stay.
use strict; use warnings; no warnings "portable";
my ($map, $prof, $n, $out) = @ARGV;
die "usage: $0 MAP PROFILE N OUT\n" unless defined $out;
my @m;
open my $f, '<', $map or die "$map: $!";
while (<$f>) { my ($s, $z) = /^(?:0x)?([0-9a-fA-F]+) (?:0x)?([0-9a-fA-F]+) / or next;
               push @m, [hex $s, hex($s) + hex($z), $_] }
close $f;
sub in_map { my $a = hex shift; for (@m) { return $_ if $a >= $_->[0] && $a < $_->[1] } undef }
sub jit_lines { my %u; for my $a ($_[0] =~ /\b0x([0-9a-f]{16})\b/g) { my $l = in_map($a); $u{$l->[2]} = 1 if $l } keys %u }
open my $p, '<', $prof or die "$prof: $!";
my ($head, $ob, $fl, $blk, @keep, %used) = ('', '', '', undef);
my $flush = sub {
    return unless defined $blk;
    my @l = jit_lines($blk);
    if (@l && @keep < $n) { push @keep, "ob=$ob\nfl=$fl\n$blk\n"; $used{$_} = 1 for @l }
    undef $blk;
};
while (my $l = <$p>) {
    chomp $l;
    if (!@keep && !defined $blk && $l !~ /^(ob|fl|fn)=/) { $head .= "$l\n" if $l =~ /\S/ && $l !~ /^totals:/; next }
    if ($l =~ /^ob=(.*)/) { $flush->(); $ob = $1; next }
    if ($l =~ /^fl=(.*)/) { $flush->(); $fl = $1; next }
    if ($l =~ /^fn=/) { $flush->(); $blk = "$l\n"; next }
    if ($l =~ /^totals:/) { $flush->(); last }
    $blk .= "$l\n" if defined $blk && $l =~ /\S/;
}
$flush->();
close $p;
die "no block with JIT code in $prof\n" unless @keep;
open my $g, '>:raw', $out or die "$out: $!";
print $g sort keys %used;
print $g "\0", $head, "\n", @keep;
close $g;
