#!/usr/bin/env bash
# mkman.sh SRCDIR OUTDIR — the man pages `make install` installs, into OUTDIR:
#   jitherald.1, jitherald.3   copied from SRCDIR (docs/man/), where they are written by
#                              hand; tests/integration/man_pages.sh lints them and fails
#                              when the header or the CLI has something they lack;
#   jh_NAME.3                  a symbolic link to jitherald.3 for each function its NAME
#                              section lists, so `man jh_code_add` works once installed and
#                              `man -l OUTDIR/jh_code_add.3` from anywhere (a `.so` request
#                              is resolved against the man tree, which -l has not).
# Run by the Makefile ($(BUILD)/man/).
set -euo pipefail
src=$1 out=$2
mkdir -p "$out"
cp "$src/jitherald.1" "$src/jitherald.3" "$out/"
# The NAME section: "name, name, ... \- what they do", on one or more lines.
names=$(sed -n '/^\.SH NAME/,/^\.SH/{/^\./d;p}' "$src/jitherald.3" | tr '\n' ' ' |
        sed 's/ *\\-.*//; s/,/ /g')
for name in $names; do
    [ "$name" = jitherald ] || ln -sf jitherald.3 "$out/$name.3"
done
