#!/usr/bin/env bash
# diag_defaults.sh — a channel that cannot serve, or leaves code out, says so on stderr once
# per cause, naming the cause and the fix, with no JITHERALD_DEBUG and no log callback (the
# one rule of src/base/diag.h); perf and valgrind would otherwise just show ???.
#   - elfmap with JITHERALD_DIR unwritable: one line naming the directory and JITHERALD_DIR;
#   - elfmap with code on writable+executable pages (minijit --rwx): one line saying the
#     pages are writable and what protection they need;
#   - JITHERALD_DEBUG=1 adds what jitherald does, and still says each cause once;
#   - a working setting prints nothing.
. "$(dirname "$0")/lib.sh"

# A directory the JIT cannot write in: as root, run the JIT as nobody (a directory of
# nobody's, read+exec only: its own, so jitherald accepts it, but not writable).
pub=$(mktemp -d "${TMPDIR:-/tmp}/jh-diag.XXXXXX")
at_exit "rm -rf '$pub'"
chmod 755 "$pub"
mkdir "$pub/ro"
as_jit=()
if [ "$(id -u)" = 0 ]; then
    require_tool setpriv util-linux
    chown 65534:65534 "$pub/ro"
    as_jit=(setpriv --reuid=65534 --regid=65534 --clear-groups)
fi
chmod 500 "$pub/ro"

run() { # NAME [VAR=VALUE...] -- minijit ARGS...: stdout to $T/NAME.out, stderr to $T/NAME.err
    local name=$1; shift
    local vars=()
    while [ "$1" != -- ]; do vars+=("$1"); shift; done
    shift
    local rc=0
    env -u JITHERALD_DEBUG "${vars[@]}" "$@" >"$T/$name.out" 2>"$T/$name.err" || rc=$?
    [ $rc = 0 ] && [ "$(cat "$T/$name.out")" = 225 ] ||
        fail "$name: the JIT did not run as without jitherald: exit $rc, $(cat "$T/$name.out" "$T/$name.err")"
    echo "$name: $(cat "$T/$name.err")"
}
lines() { wc -l < "$T/$1.err"; }

# 1. JITHERALD_DIR unwritable.
run ro JITHERALD=elfmap JITHERALD_DIR="$pub/ro" -- "${as_jit[@]}" "$MINIJIT" "$MINI/calls.mini"
[ "$(lines ro)" = 1 ] || fail "unwritable JITHERALD_DIR: not one line: $(cat "$T/ro.err")"
grep -q "warning: elfmap: cannot create $pub/ro/jit-[0-9]*-[0-9]*\.elf: Permission denied" "$T/ro.err" ||
    fail "unwritable JITHERALD_DIR: the file and the cause are not named: $(cat "$T/ro.err")"
grep -q "perf and valgrind show it as ???; set JITHERALD_DIR to a directory you can write" "$T/ro.err" ||
    fail "unwritable JITHERALD_DIR: no consequence or fix: $(cat "$T/ro.err")"

# 2. Code on writable and executable pages.
run rwx JITHERALD=elfmap JITHERALD_DIR="$T/d" -- "$MINIJIT" --rwx "$MINI/calls.mini"
[ "$(lines rwx)" = 1 ] || fail "RWX pages: not one line: $(cat "$T/rwx.err")"
grep -q "warning: elfmap: code at 0x[0-9a-f]*-0x[0-9a-f]* left anonymous, so valgrind (and perf, without perfmap or jitdump) shows it as ???: the pages are writable: .*mprotect them PROT_READ|PROT_EXEC before jh_code_add" \
    "$T/rwx.err" || fail "RWX pages: cause or fix not named: $(cat "$T/rwx.err")"

# 3. JITHERALD_DEBUG=1: more is said, each cause still once.
run rwx-debug JITHERALD=elfmap JITHERALD_DIR="$T/d" JITHERALD_DEBUG=1 -- "$MINIJIT" --rwx "$MINI/calls.mini"
[ "$(grep -c 'warning: elfmap: code at .* the pages are writable' "$T/rwx-debug.err")" = 1 ] ||
    fail "JITHERALD_DEBUG=1: the RWX warning not said exactly once: $(cat "$T/rwx-debug.err")"
grep -q "info: elfmap: 0 swaps, [0-9]* left anonymous" "$T/rwx-debug.err" ||
    fail "JITHERALD_DEBUG=1 adds nothing: $(cat "$T/rwx-debug.err")"

# 4. The same channel working: silence.
run ok JITHERALD=elfmap JITHERALD_DIR="$T/d" -- "$MINIJIT" "$MINI/calls.mini"
[ "$(lines ok)" = 0 ] || fail "a working elfmap is not silent: $(cat "$T/ok.err")"
echo "PASS: unwritable JITHERALD_DIR and RWX pages: one line each, with the fix; silent when it works"
