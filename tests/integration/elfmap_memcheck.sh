#!/usr/bin/env bash
# memcheck runs the demo JIT clean with its code pages swapped for ELF files: one thread,
# several threads compiling into shared pages, and freed code re-used.
. "$(dirname "$0")/lib.sh"
require_tool valgrind valgrind
export JITHERALD=elfmap JITHERALD_DIR=$T/d JITHERALD_DEBUG=1
run() { # expected-output args...
    local want=$1; shift
    valgrind -q --error-exitcode=3 --tool=memcheck "$MINIJIT" "$@" > "$T/out" 2> "$T/err" || {
        cat "$T/err"; fail "memcheck exit $? for $*"; }
    cat "$T/err"
    ! grep -E '^==[0-9]+== ' "$T/err" || fail "memcheck reported errors for $*"
    [ "$(sort -u "$T/out")" = "$want" ] || fail "$* printed $(cat "$T/out")"
    grep -E 'elfmap: [1-9][0-9]* swaps, 0 left anonymous' "$T/err"
}
run 377 "$MINI/fib.mini" 14
run 144 --remove --recompile "$MINI/fib.mini" 12
run "$(JITHERALD= "$MINIJIT" --threads 3 "$MINI/calls.mini" | sort -u)" \
    --threads 3 "$MINI/calls.mini"
ls "$T"/d/jit-*.elf
echo PASS
