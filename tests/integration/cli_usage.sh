#!/usr/bin/env bash
# cli_usage.sh — the CLI's rough edges a new user hits (issue 23, item 12):
#   - a usage error of any command prints what was wrong, that command's one usage line and
#     "see 'jitherald CMD --help'", exit 2 (not the whole help);
#   - `-o -` (and callgrind's OUT -) is standard output, and no file named "-" appears;
#   - `jitherald log report FILE`, perf's word order, is answered with the order that works;
#   - an output that cannot be written is exit 2, as the help says: to-elf into a directory
#     that cannot be written or made, -o /dev/full, standard output on a full disk.
. "$(dirname "$0")/lib.sh"
G=$R/tests/golden/corpus
cd "$T"
cp "$G/calls.jhlog" "$G/small.cgout" "$G/calls.map" .

# every command: a bad option
for c in $("$CLI" --help | awk '/^commands:/ {c = 1; next} c && /^  [a-z]/ {print $1}'); do
    rc=0; "$CLI" "$c" --frobnicate > out 2> err || rc=$?
    [ $rc = 2 ] || fail "jitherald $c --frobnicate: exit $rc"
    [ "$(wc -l < err)" -le 3 ] || fail "jitherald $c --frobnicate: $(wc -l < err) lines: $(cat err)"
    grep -q "^usage: jitherald $c " err && [ "$(tail -1 err)" = "see 'jitherald $c --help'" ] ||
        fail "jitherald $c --frobnicate: $(cat err)"
    [ ! -s out ] || fail "jitherald $c --frobnicate wrote to stdout"
done
rc=0; "$CLI" > out 2> err || rc=$?
[ $rc = 2 ] && [ "$(tail -1 err)" = "see 'jitherald --help'" ] && [ "$(wc -l < err)" = 2 ] ||
    fail "jitherald alone: exit $rc: $(cat err)"

# -o - and OUT -
"$CLI" log calls.jhlog to-perfmap > want.map
"$CLI" log calls.jhlog to-perfmap -o - > got.map
cmp want.map got.map || fail "-o - is not standard output"
"$CLI" log calls.jhlog report -o - | grep -q '<html' || fail "report -o - wrote no HTML to stdout"
"$CLI" log calls.jhlog to-jitdump -o - | head -c 4 | od -An -tx1 | grep -q '44 54 69 4a' ||
    fail "to-jitdump -o - wrote no jitdump to stdout"
"$CLI" callgrind --map calls.map small.cgout - 2> /dev/null | grep -q '^fn=' ||
    fail "callgrind OUT - wrote no profile to stdout"
[ ! -e ./- ] || fail "a file named - was created"

# perf's order
rc=0; "$CLI" log report calls.jhlog > out 2> err || rc=$?
[ $rc = 2 ] && [ "$(wc -l < err)" = 1 ] && grep -qF 'jitherald log calls.jhlog report' err ||
    fail "log report FILE: exit $rc: $(cat err)"

# outputs that cannot be written: exit 2, the file named
expect2() { # what cmd...
    local what=$1 rc=0; shift
    "$@" > /dev/null 2> err || rc=$?
    [ $rc = 2 ] || fail "$what: exit $rc, not 2: $(cat err)"
    echo "ok: $what: $(cat err)"
}
touch afile
expect2 "to-elf under a file" "$CLI" log calls.jhlog to-elf afile/imgs
grep -q 'afile/imgs: Not a directory' err || fail "to-elf under a file: $(cat err)"
expect2 "-o /dev/full" "$CLI" log calls.jhlog to-perfmap -o /dev/full
grep -q '/dev/full: No space left on device' err || fail "-o /dev/full: $(cat err)"
rc=0; "$CLI" log calls.jhlog list > /dev/full 2> err || rc=$?
[ $rc = 2 ] && grep -q 'standard output: No space left on device' err || fail "list > /dev/full: exit $rc $(cat err)"
expect2 "callgrind OUT /dev/full" "$CLI" callgrind --map calls.map small.cgout /dev/full
# a directory we may not write to (as nobody when root: root writes anywhere)
runas=()
if [ "$(id -u)" = 0 ]; then
    runas=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
    chmod 755 "$T"; chmod 644 calls.jhlog
fi
mkdir -m 555 ro
expect2 "to-elf into a read-only directory" "${runas[@]}" "$CLI" log calls.jhlog to-elf ro
grep -q 'ro/jit-[0-9]*-1.elf: Permission denied' err || fail "to-elf ro: $(cat err)"
expect2 "to-elf into a new directory under a read-only one" "${runas[@]}" "$CLI" log calls.jhlog to-elf ro/new
grep -q 'to-elf ro/new: Permission denied' err || fail "to-elf ro/new: $(cat err)"
echo PASS
