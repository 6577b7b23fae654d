#!/bin/sh
# scripts/gdb-section.sh LIB — run by make right after linking libjitherald.so: sets
# SHF_EXECINSTR on the section that holds __jit_debug_descriptor (.jh_gdb_jit,
# src/channels/gdb_jit.h), in the section header only. Program headers, and so the page's
# protection (read-write, not executable), are untouched: the loader never reads section
# headers.
#
# Why: gdb 13 records a global symbol of a shared library whose section is allocated and
# not executable as data (elfread.c, elf_symtab_read: mst_data/mst_bss), marks every such
# symbol outside the executable "maybe copied" (record_minimal_symbol), and then reads it at
# the executable's symbol of the same name when there is one (symtab.c,
# get_msymbol_address). A program that defines its own __jit_debug_descriptor (PHP) thus
# hid ours from gdb. A symbol in an executable section is text (mst_text): read where it
# is. strip and objcopy keep the flag; `objcopy --set-section-flags` is not used because it
# drops PT_GNU_RELRO. ELF64 little-endian (x86-64, arm64) only; anything else fails.
#
# Check by hand: readelf -W -S LIB | grep jh_gdb_jit   (flags WAX)
#                readelf -W -l LIB                      (no RWX LOAD segment)
set -eu
f=$1
sec=.jh_gdb_jit
# ELF64 (class 2), little-endian (data 1)
[ "$(od -An -tx1 -j4 -N2 "$f" | tr -d ' ')" = 0201 ] ||
    { echo "$0: $f: not ELF64 little-endian" >&2; exit 1; }
u() { od -An -tu"$2" -j"$1" -N"$2" "$f" | tr -d ' '; }   # OFFSET SIZE: an unsigned field
shoff=$(u 40 8) shentsize=$(u 58 2)
idx=$(readelf -W -S "$f" | sed -n "s/^ *\[ *\([0-9]*\)\] $sec .*/\1/p")
[ -n "$idx" ] || { echo "$0: $f has no section $sec" >&2; exit 1; }
at=$((shoff + idx * shentsize + 8))     # sh_flags, after sh_name and sh_type
flags=$(u "$at" 1)
[ $((flags & 3)) = 3 ] || { echo "$0: $f: $sec is not allocated and writable" >&2; exit 1; }
new=$((flags | 4))                      # SHF_EXECINSTR
printf "\\$(printf %03o "$new")" | dd of="$f" bs=1 seek="$at" conv=notrunc status=none
readelf -W -S "$f" | grep -Eq "\] $sec +PROGBITS +.* WAX " ||
    { echo "$0: $f: $sec not marked" >&2; exit 1; }
if readelf -W -l "$f" | grep -E '^ +LOAD ' | grep -q 'RWE'; then
    echo "$0: $f has a writable and executable segment" >&2; exit 1
fi
