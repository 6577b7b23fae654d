#!/usr/bin/env bash
# memcheck runs the demo JIT clean with its code pages swapped for ELF files: one thread,
# several threads compiling into shared pages, and freed code re-used.
set -eu
B=$JH_BUILD; R=$JH_ROOT
command -v valgrind >/dev/null || { echo "SKIP valgrind is not installed"; exit 77; }
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
export JITHERALD=elfmap JITHERALD_DIR=$T/d JITHERALD_DEBUG=1
run() { # expected-output args...
    local want=$1; shift
    valgrind -q --error-exitcode=3 --tool=memcheck "$B/examples/minijit" "$@" > "$T/out" 2> "$T/err" || {
        cat "$T/err"; echo "FAIL: memcheck exit $? for $*"; exit 1; }
    cat "$T/err"
    if grep -E '^==[0-9]+== ' "$T/err"; then echo "FAIL: memcheck reported errors for $*"; exit 1; fi
    [ "$(sort -u "$T/out")" = "$want" ] || { echo "FAIL: $* printed $(cat "$T/out")"; exit 1; }
    grep -E 'elfmap: [1-9][0-9]* swaps, 0 left anonymous' "$T/err"
}
run 377 "$R/examples/minijit/fib.mini" 14
run 144 --remove --recompile "$R/examples/minijit/fib.mini" 12
run "$(JITHERALD= "$B/examples/minijit" --threads 3 "$R/examples/minijit/calls.mini" | sort -u)" \
    --threads 3 "$R/examples/minijit/calls.mini"
ls "$T"/d/jit-*.elf
echo PASS
