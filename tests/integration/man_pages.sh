#!/usr/bin/env bash
# man_pages.sh — the man pages (docs/man/, built into $B/man/ by scripts/mkman.sh) are clean
# and complete, so they cannot drift from what they describe:
#   - every page, and every jh_NAME.3 link, renders with `man -l` with no groff warning
#     (man --warnings, and --warnings=all) and passes `mandoc -T lint` with no message at
#     any level;
#   - jitherald(3) has every function of include/jitherald.h (its NAME section, a link
#     jh_NAME.3, its declaration as the header has it in SYNOPSIS, a subsection in
#     DESCRIPTION), every constant with its value, every field of every struct, every JH_E*
#     code and every errno the API returns in ERRORS, every JITHERALD* variable the library
#     reads in ENVIRONMENT, and an EXAMPLES program that compiles and runs;
#   - jitherald(1) has every command of `jitherald --help` (SYNOPSIS and a subsection of
#     DESCRIPTION), every option of each command's --help in OPTIONS, every command of
#     `jitherald log`, and in ENVIRONMENT every JITHERALD* variable the library, the preload
#     library of `jitherald run`, the CLI and the LuaJIT adapter read;
#   - both say the version the library has.
. "$(dirname "$0")/lib.sh"
require_tool mandoc mandoc
require_tool man man-db
M=$B/man
[ -f "$M/jitherald.1" ] && [ -f "$M/jitherald.3" ] || fail "$M has no pages (make man)"
errors=0
bad() { echo "FAIL: $*"; errors=$((errors + 1)); }

# --- lint and render every page, links included
pages=("$M"/*.[13])
[ ${#pages[@]} -ge 3 ] || fail "no jh_NAME.3 links in $M"
for p in "${pages[@]}"; do
    n=${p##*/}
    for w in --warnings --warnings=all; do
        LC_ALL=C.UTF-8 MANWIDTH=80 man $w -l "$p" >"$T/out" 2>"$T/err" ||
            bad "man -l $n failed: $(cat "$T/err")"
        [ ! -s "$T/err" ] || bad "man $w -l $n: $(head -5 "$T/err")"
        grep -q '^NAME' "$T/out" || bad "man -l $n shows no NAME section"
    done
    [ -L "$p" ] && continue
    mandoc -T lint -W style "$p" >"$T/lint" 2>&1 || true
    [ ! -s "$T/lint" ] || bad "mandoc -T lint $n: $(head -10 "$T/lint")"
done

# The rendered text of a page, one space for every run of blanks, and one of its sections.
render() { LC_ALL=C MANWIDTH=200 man -l "$1" 2>/dev/null | col -bx; }
section() { awk -v s="$2" '/^[A-Z]/ { on = ($0 == s) } on' "$1"; }
flat() { tr -s ' \n\t' '   '; }
render "$M/jitherald.3" > "$T/p3"
render "$M/jitherald.1" > "$T/p1"
flat < "$T/p3" > "$T/p3.flat"
has() { grep -qF -- "$2" "$1"; }    # file needle

version=$("$CLI" --version | awk '{print $2}')
for p in jitherald.1 jitherald.3; do
    grep -q "^\.TH JITHERALD [13] [0-9-]* \"jitherald $version\"" "$M/$p" ||
        bad "$p: .TH does not say jitherald $version: $(grep '^\.TH' "$M/$p")"
done

# --- jitherald(3) against the header: what it declares, one item per line
perl -e '
    local $/; my $h = <STDIN>;
    for (my $s = $h; $s =~ /^JH_API\s+([^;]*?\b(jh_\w+)\s*\([^;]*\);)/mg;) {
        my ($d, $f) = ($1, $2); $d =~ s/\s+/ /g; print "fn\t$f\t$d\n";
    }
    while ($h =~ /^#define\s+(JH_\w+)\s+(\S.*?)\s*$/mg) {
        print "const\t#define $1 $2\n" unless $1 eq "JH_API";
    }
    (my $c = $h) =~ s{/\*.*?\*/}{ }gs;          # comments out
    $c =~ s{//[^\n]*}{}g;
    while ($c =~ /\benum\s*\w*\s*\{(.*?)\}/gs) {
        for (split /,/, $1) { s/\s+/ /g; s/^ | $//g; print "const\t$_\n" if /^JH_\w+ = /; }
    }
    while ($c =~ /^typedef\s+([^;]*);/mg) { (my $t = "typedef $1;") =~ s/\s+/ /g; print "type\t$t\n"; }
    while ($c =~ /\bstruct\s+(jh_\w+)\s*\{(.*?)\n\};/gs) {
        my ($s, $body, $depth, $cur) = ($1, $2, 0, "");
        for my $ch (split //, $body) {
            $depth++ if $ch eq "{"; $depth-- if $ch eq "}";
            $cur .= $ch;
            if ($ch eq ";" && !$depth) { $cur =~ s/\s+/ /g; $cur =~ s/^ //; print "field\t$s\t$cur\n"; $cur = ""; }
        }
    }
    print "err\t$1\n" while $c =~ /\b(JH_E[A-Z]+)\s*=\s*-/g;
' < "$R/include/jitherald.h" > "$T/header"
[ "$(grep -c "^fn" "$T/header")" -ge 12 ] || fail "header parse found too few functions: $(cat "$T/header")"
[ "$(grep -c '^field' "$T/header")" -ge 40 ] || fail "header parse found too few fields"
names=$(sed -n '/^\.SH NAME/,/^\.SH/{/^\./d;p}' "$M/jitherald.3" | tr '\n' ' ' | sed 's/ *\\-.*//; s/,/ /g')
section "$T/p3" DESCRIPTION > "$T/p3.desc"
section "$T/p3" ERRORS | flat > "$T/p3.err"
section "$T/p3" ENVIRONMENT > "$T/p3.env"
while IFS=$'\t' read -r kind a b; do
    case $kind in
    fn)
        [[ " $names " == *" $a "* ]] || bad "jitherald.3: $a missing from NAME (so man $a finds nothing)"
        [ -L "$M/$a.3" ] || bad "$M/$a.3: no link for $a"
        has "$T/p3.flat" "$b" || bad "jitherald.3: SYNOPSIS lacks the header's declaration: $b"
        grep -qx "   $a()" "$T/p3.desc" || bad "jitherald.3: DESCRIPTION has no subsection $a()" ;;
    const|type) has "$T/p3.flat" "$a" || bad "jitherald.3 lacks \`$a\` (the header has it)" ;;
    field) has "$T/p3.flat" "$b" || bad "jitherald.3 lacks the field \`$b\` of struct $a" ;;
    err) grep -q -- "$a" "$T/p3.err" || bad "jitherald.3: ERRORS lacks $a" ;;
    esac
done < "$T/header"
for e in $(grep -ohE 'return -E[A-Z0-9]+' "$R"/src/core/*.c | sort -u | sed 's/return //'); do
    has "$T/p3.err" "$e" || bad "jitherald.3: ERRORS lacks $e, which the API returns (src/core)"
done
vars() { grep -rhoE '"JITHERALD[A-Z_]*"' "$@" --include=*.c --include=*.h --include=*.lua | tr -d '"' | sort -u; }
for v in $(vars "$R/src"); do
    grep -qx "       $v" "$T/p3.env" || bad "jitherald.3: ENVIRONMENT lacks $v, which the library reads"
done

# --- jitherald(1) against the CLI
section "$T/p1" SYNOPSIS > "$T/p1.syn"
section "$T/p1" DESCRIPTION > "$T/p1.desc"
section "$T/p1" OPTIONS > "$T/p1.opt"
section "$T/p1" ENVIRONMENT > "$T/p1.env"
cmds=$("$CLI" --help | awk '/^commands:/ {c = 1; next} c && /^  [a-z]/ {print $1}')
[ "$(echo "$cmds" | wc -w)" -ge 6 ] || fail "jitherald --help lists too few commands: $cmds"
for c in $cmds; do
    grep -q "^       jitherald $c\b" "$T/p1.syn" || bad "jitherald.1: SYNOPSIS lacks jitherald $c"
    grep -qx "   jitherald $c" "$T/p1.desc" || bad "jitherald.1: DESCRIPTION has no subsection jitherald $c"
    # the options of the usage lines, and those that begin a line of the help
    opts=$("$CLI" "$c" --help | perl -ne '
        if (/^usage:|^\s+jitherald /) { print "$1\n" while /(?:^|[\s\[|])(--?[a-z][a-z-]*)/g; }
        elsif (/^\s+(-[a-z-]+)(?:, (--?[a-z-]+))?/) { print "$1\n"; print "$2\n" if $2; }' | sort -u)
    [ -n "$opts" ] || [ "$c" = inspect ] || [ "$c" = check ] || bad "no option found in jitherald $c --help"
    # this command's options: its subsection of OPTIONS (inspect and check share one)
    awk -v c="jitherald $c" '/^   [a-z]/ {on = index($0, c) > 0} on' "$T/p1.opt" > "$T/p1.opt.$c"
    [ -s "$T/p1.opt.$c" ] || [ -z "$opts" ] || bad "jitherald.1: OPTIONS has no subsection for $c"
    for o in $opts; do
        grep -qE -- "(^|[ ,])$o([ ,=]|$)" "$T/p1.opt.$c" || bad "jitherald.1: OPTIONS of $c lacks $o"
    done
done
logcmds=$("$CLI" log --help | awk '/^commands:/ {c = 1; next} /^options:/ {c = 0} c && /^  [a-z]/ {print $1}')
[ "$(echo "$logcmds" | wc -w)" -ge 9 ] || fail "jitherald log --help lists too few commands"
awk '/^   jitherald log$/ {on = 1; next} /^   [a-z]/ {on = 0} on' "$T/p1.desc" > "$T/p1.log"
for c in $logcmds; do
    grep -qE "^       $c( |$)" "$T/p1.log" || bad "jitherald.1: jitherald log's command $c is not described"
done
for v in $(vars "$R/src" "$R/adapters" "$R/tools"); do
    grep -qx "       $v" "$T/p1.env" || bad "jitherald.1: ENVIRONMENT lacks $v"
done

# --- jitherald(3)'s EXAMPLES program, as a user would paste it
sed -n '/^\.SH EXAMPLES/,/^\.SH/p' "$M/jitherald.3" | awk '/^\.EX/ {n++; next} /^\.EE/ {exit} n == 1' |
    sed -e 's/\\-/-/g' -e 's/\\e/\\/g' > "$T/answer.c"
grep -q 'jh_code_add' "$T/answer.c" || fail "no program in jitherald.3's EXAMPLES"
cc -Wall -Wextra -Werror -I"$R/include" -o "$T/answer" "$T/answer.c" -L"$B" -ljitherald \
    -Wl,-rpath,"$B" 2>"$T/cc.err" || bad "jitherald.3's example does not compile: $(cat "$T/cc.err")"
if [ -x "$T/answer" ]; then
    JITHERALD=perfmap "$T/answer" > "$T/answer.out" & pid=$!
    at_exit "rm -f /tmp/perf-$pid.map"
    wait $pid || bad "jitherald.3's example failed"
    grep -qx 42 "$T/answer.out" || bad "jitherald.3's example printed $(cat "$T/answer.out")"
    grep -Eq '^[0-9a-f]+ 6 answer$' "/tmp/perf-$pid.map" ||
        bad "jitherald.3's example did not name its code in the perf map"
fi
[ $errors = 0 ] || fail "$errors problems in the man pages"
echo "PASS: $(( ${#pages[@]} )) pages lint clean; $(grep -c . "$T/header") header items and $(echo $cmds | wc -w) commands documented"
