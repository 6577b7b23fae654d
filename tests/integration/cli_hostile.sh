#!/usr/bin/env bash
# cli_hostile.sh — the CLI reading what it cannot trust (issue 11, items 13, 14 and the
# sources a log names):
#   - `jitherald callgrind IN OUT` without --map guesses /tmp/perf-PID.map (and jit-PID.dump
#     in $JITHERALD_DIR), names anyone can plant: a FIFO, a symlink (to /dev/zero), another
#     user's file, a hard link, a huge file there are refused at once, each with the reason
#     and the way to use it anyway (--map); our own map is used;
#   - `jitherald log` on a log whose executable is now a FIFO: report and show finish, and
#     say why the binary was not read;
#   - `show` and `report` quote the source lines of files under the current directory or
#     --source-dir only: a log naming a file elsewhere (or reaching it through a symlink)
#     gets its file:line and no text, and a note on stderr.
# Every command runs under `timeout`: before, the FIFOs hung the CLI forever.
. "$(dirname "$0")/lib.sh"
G=$R/tests/golden/corpus
PID=$BASHPID
MAP=/tmp/perf-$PID.map
at_exit "rm -f $MAP"
export JITHERALD_DIR=$T/jhdir
mkdir -m 700 "$JITHERALD_DIR"
sed "s/^pid: .*/pid: $PID/" "$G/small.cgout" > "$T/in.cgout"
cg() { # expected-exit: run the rewriter with the guessed files, output in $T/out, $T/err
    local rc=0
    timeout 20 "$CLI" callgrind "$T/in.cgout" "$T/out" > /dev/null 2> "$T/err" || rc=$?
    [ "$rc" != 124 ] || fail "jitherald callgrind hung ($(ls -l "$MAP" 2>&1))"
    [ "$rc" = "$1" ] || { cat "$T/err"; fail "jitherald callgrind exited $rc, not $1"; }
}
refused() { # what: the reason must be given, with the way out
    grep -q "$MAP: refused: $1" "$T/err" || { cat "$T/err"; fail "no 'refused: $1' for $MAP"; }
    grep -q "name it with --map" "$T/err" || fail "the refusal does not say how to use the file"
    rm -f "$T/out"
}
no_root_parts=()

# our own perf map: used (the control)
cp "$G/calls.map" "$MAP"
cg 0
grep -q "^cfn=([0-9]*) a$" "$T/out" || fail "own perf map not used: $(head -c 300 "$T/out")"
rm -f "$MAP"

mkfifo "$MAP"
cg 1; refused "not a regular file"
rm -f "$MAP"

ln -s /dev/zero "$MAP"
cg 1; refused "it is a symbolic link"
rm -f "$MAP"

cp "$G/calls.map" "$T/mine.map"; ln -s "$T/mine.map" "$MAP"   # a symlink to a file of ours
cg 1; refused "it is a symbolic link"
rm -f "$MAP"

cp "$G/calls.map" "$T/linked.map"; ln "$T/linked.map" "$MAP"  # a hard link to a file of ours
cg 1; refused "another user's file, or a file with several links"
rm -f "$MAP"

truncate -s 2G "$MAP"                                           # sparse: nothing to fill /tmp
cg 1; refused "larger than"
rm -f "$MAP"

if [ "$(id -u)" = 0 ]; then
    cp "$G/calls.map" "$MAP"; chown nobody "$MAP"
    cg 1; refused "another user's file"
    rm -f "$MAP"
    # named on the command line, the same file is the user's choice: used
    cp "$G/calls.map" "$T/theirs.map"; chown nobody "$T/theirs.map"
    "$CLI" callgrind --map "$T/theirs.map" "$T/in.cgout" "$T/out" 2> "$T/err" || fail "--map refused"
    grep -q "^cfn=([0-9]*) a$" "$T/out" || fail "--map FILE not used"
else
    no_root_parts+=("another user's perf map (needs root to chown)")
fi

# a jitdump guessed in $JITHERALD_DIR that is a FIFO: refused, and the map is the fallback
mkfifo "$JITHERALD_DIR/jit-$PID.dump"
cp "$G/calls.map" "$MAP"
cg 0
grep -q "jit-$PID.dump: refused: not a regular file .*--jitdump" "$T/err" || fail "jitdump FIFO: $(cat "$T/err")"
grep -q "^cfn=([0-9]*) a$" "$T/out" || fail "perf map not used after the jitdump was refused"
rm -f "$MAP" "$JITHERALD_DIR/jit-$PID.dump"
echo "PASS callgrind: guessed files refused (FIFO, symlinks, hard link, 2 GiB, another user's)"

# ---- a log whose executable has become a FIFO ------------------------------------------
mkdir "$T/vm" "$T/logs"
cp "$MINIJIT" "$T/vm/minijit"
JITHERALD=auditlog JITHERALD_DIR=$T/logs LD_LIBRARY_PATH=$B "$T/vm/minijit" --log-structs \
    "$MINI/fib.mini" 5 > /dev/null
L=$(echo "$T"/logs/*.jhlog)
rm "$T/vm/minijit"; mkfifo "$T/vm/minijit"
addr=$("$CLI" log "$L" list | awk '$4 == "memory" { print $5; exit }')
for args in "report -o $T/r.html" "show $addr" "show fib"; do
    rc=0
    timeout 20 "$CLI" log "$L" $args > "$T/out" 2> "$T/err" || rc=$?
    [ "$rc" != 124 ] || fail "jitherald log $args hung on a FIFO named as the executable"
    [ "$rc" = 0 ] || { cat "$T/err"; fail "jitherald log $args exited $rc"; }
done
grep -q "vm/minijit: refused: not a regular file" "$T/err" ||
    "$CLI" log "$L" show "$addr" 2>&1 | grep -q "refused: not a regular file" ||
    fail "no word on the executable that was not read"
echo "PASS log: an executable replaced by a FIFO is refused, the views finish"

# ---- sources a log names -------------------------------------------------------------
mkdir "$T/outside" "$T/elsewhere"
printf 'fn main() {\n    return 7  # SECRET-LINE-4711\n}\n' > "$T/outside/secret.mini"
ln -s "$T/outside" "$T/elsewhere/link"
rm -f "$T"/logs/*
JITHERALD=auditlog JITHERALD_DIR=$T/logs "$MINIJIT" "$T/outside/secret.mini" > /dev/null
JITHERALD=auditlog JITHERALD_DIR=$T/logs "$MINIJIT" "$T/elsewhere/link/secret.mini" > /dev/null
set -- "$T"/logs/*.jhlog
[ $# = 2 ] || fail "expected two logs, got $#"
for L in "$@"; do
    (cd "$T/elsewhere" && "$CLI" log "$L" show main) > "$T/out" 2> "$T/err"
    grep -q "secret.mini:2" "$T/out" || fail "file:line missing: $(cat "$T/out")"
    ! grep -q SECRET "$T/out" || fail "a source outside the current directory was quoted"
    grep -q "outside/secret.mini: not read, though the log names it as a source" "$T/err" ||
        fail "no note on the source not read: $(cat "$T/err")"
    (cd "$T/elsewhere" && "$CLI" log "$L" report -o "$T/r.html") 2> /dev/null
    ! grep -q SECRET "$T/r.html" || fail "the report quoted a source outside the current directory"
    (cd "$T/elsewhere" && "$CLI" log --source-dir "$T/outside" "$L" show main) > "$T/out"
    grep -q "SECRET-LINE-4711" "$T/out" || fail "--source-dir: the source was not quoted"
    (cd "$T/outside" && "$CLI" log "$L" show main) > "$T/out"
    grep -q "SECRET-LINE-4711" "$T/out" || fail "the current directory's source was not quoted"
    (cd "$T/outside" && "$CLI" log --no-source "$L" show main) > "$T/out"
    ! grep -q SECRET "$T/out" || fail "--no-source quoted a source"
done
echo "PASS sources: quoted only under the current directory or --source-dir"

[ ${#no_root_parts[@]} = 0 ] || skip "not checked: ${no_root_parts[*]} (the other checks passed)"
