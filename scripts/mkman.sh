#!/usr/bin/env bash
# mkman.sh CLI HEADER OUTDIR — writes the man pages `make install` installs, generated so
# that they cannot drift from what they describe:
#   jitherald.1   the CLI: `CLI --help` (the command table in tools/main.c) and each
#                 command's own `CLI CMD --help`, verbatim;
#   jitherald.3   the API: include/jitherald.h, whose comments are the manual (its opening
#                 comment, then each declaration with the comment above it, verbatim);
#   jh_*.3        one `.so man3/jitherald.3` page per function, so `man jh_code_add` works.
# Run by the Makefile ($(BUILD)/man/); tests/integration/install_pkgconfig.sh renders them.
set -euo pipefail
cli=$1 header=$2 out=$3
mkdir -p "$out"
version=$("$cli" --version | awk '{print $2}')
date=$(date -u -d "@${SOURCE_DATE_EPOCH:-$(stat -c %Y "$header")}" +%Y-%m-%d)

# Text shown as is: roff escapes backslashes and control characters at line starts.
verbatim() { printf '.nf\n'; sed -e 's/\\/\\e/g' -e "s/^\\([.']\\)/\\\\\\&\\1/"; printf '.fi\n'; }

{
    printf '.TH JITHERALD 1 "%s" "jitherald %s" "jitherald"\n' "$date" "$version"
    printf '.SH NAME\njitherald \\- read the files jitherald writes about JIT code\n'
    printf '.SH SYNOPSIS\n'
    "$cli" --help | sed -n '/^usage:/,/^$/p' | sed -e 's/^usage: *//' -e 's/^ *//' -e '/^$/d' |
        while read -r l; do printf '.B %s\n.br\n' "$l"; done
    printf '.SH DESCRIPTION\n'
    printf 'The offline tools of jitherald, a library that makes JIT-compiled code visible to\n'
    printf 'perf, gdb, lldb, valgrind and an audit log. Until installed the command is\n'
    printf '.IR build/jitherald .\n'
    "$cli" --help | sed -n '/^commands:/,$p' | verbatim
    for cmd in $("$cli" --help | awk '/^commands:/{c=1; next} c && /^  [a-z]/{print $1}'); do
        printf '.SH "jitherald %s"\n' "$cmd"
        "$cli" "$cmd" --help | verbatim
    done
    printf '.SH ENVIRONMENT\n.TP\n.B JITHERALD_DIR\n'
    printf 'where jitherald'"'"'s files are (default /tmp/jitherald-UID): read by\n'
    printf '.B clean\nand\n.BR callgrind .\n'
    printf '.SH SEE ALSO\n.BR jitherald (3),\n.BR perf (1),\n.BR gdb (1),\n.BR valgrind (1)\n'
} > "$out/jitherald.1"

{
    printf '.TH JITHERALD 3 "%s" "jitherald %s" "jitherald"\n' "$date" "$version"
    printf '.SH NAME\njitherald \\- make JIT-compiled code known to every tool that looks at a process\n'
    printf '.SH SYNOPSIS\n.nf\n.B #include <jitherald.h>\n.PP\n'
    awk '/^JH_API/ {d=1; sub(/^JH_API /, "")} d {gsub(/^ +/, " "); l = l $0} d && /;/ {print l; l=""; d=0}' \
        "$header" | sed -e 's/\\/\\e/g' -e 's/^/.B /'
    printf '.fi\n.PP\nLink with\n.IR "$(pkg-config \\-\\-cflags \\-\\-libs jitherald)" .\n'
    printf '.SH DESCRIPTION\n'
    # the opening comment: the overview and the conventions every function follows
    awk 'NR==1 && /^\/\*/ {c=1; next} c && /^ \*\// {exit} c {sub(/^ \* ?/, ""); print}' \
        "$header" | verbatim
    printf '.SH "THE API, AS THE HEADER STATES IT"\n'
    # everything after the opening comment, comments and declarations as they are
    awk 'f {print} /^ \*\// && !f {f=1}' "$header" | grep -v -e '^#' -e '^$' | verbatim
    printf '.SH ENVIRONMENT\nJITHERALD, JITHERALD_DIR, JITHERALD_DEBUG: see jh_open above.\n'
    printf '.SH SEE ALSO\n.BR jitherald (1)\n'
} > "$out/jitherald.3"

for fn in $(grep -oE '^JH_API [^(]*\bjh_[a-z_]+\(' "$header" | grep -oE 'jh_[a-z_]+\($' | tr -d '('); do
    printf '.so man3/jitherald.3\n' > "$out/$fn.3"
done
