#!/usr/bin/perl
# cg_named.pl MAP ANNOTATION — of the instructions callgrind_annotate (--threshold=100)
# counted in the ranges a perf map lists, how many are attributed to a name in one of
# elfmap's images and how many are left as addresses (`???:0x…`). Prints
#     JIT instructions: N named, M by address (P% named)
# and exits 0 when most are named (at least MIN_PERCENT, if given). Used by
# run_rakudo_callgrind.sh, bench/preload.sh and bench/callgrind_live.sh. With --offline
# first, names `jitherald callgrind` gave (object [perf-PID.map] or [jit-PID.dump]) count
# as named too: for a rewritten profile.
use strict;
use warnings;
no warnings 'portable';   # 64-bit addresses
my $offline = @ARGV && $ARGV[0] eq '--offline' ? shift @ARGV : undef;
my ($mapf, $annf, $min) = @ARGV;
die "usage: cg_named.pl [--offline] MAP ANNOTATION [MIN_PERCENT]\n" unless defined $annf;
open my $m, '<', $mapf or die "$mapf: $!\n";
my @r;
while (<$m>) {
    my ($s, $n) = split;
    next unless defined $n && $s =~ /^(?:0x)?[0-9a-f]+$/i && $n =~ /^(?:0x)?[0-9a-f]+$/i;
    push @r, [hex $s, hex($s) + hex $n];
}
open my $a, '<', $annf or die "$annf: $!\n";
my ($named, $bare) = (0, 0);
while (my $l = <$a>) {
    my ($c) = $l =~ /^\s*([\d,]+)/ or next;
    $c =~ tr/,//d;
    if ($l =~ m{\[[^]]*/jit-\d+-\d+\.elf\]}) { $named += $c; next }
    if ($offline && $l =~ m{\[(?:[^]]*/)?(?:perf-\d+\.map|jit-\d+\.dump)\]}) { $named += $c; next }
    my ($at) = $l =~ /\?\?\?:0x([0-9a-f]+)/ or next;
    $at = hex $at;
    for my $x (@r) {
        if ($at >= $x->[0] && $at < $x->[1]) { $bare += $c; last }
    }
}
printf "JIT instructions: %d named, %d by address (%.1f%% named)\n", $named, $bare,
    100 * $named / (($named + $bare) || 1);
exit(defined $min ? (100 * $named >= $min * ($named + $bare) && $named ? 0 : 1)
                  : ($named > $bare ? 0 : 1));
