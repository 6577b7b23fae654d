#!/usr/bin/env bash
# memcheck runs the demo JIT clean with its code pages swapped for ELF files: one thread,
# several threads compiling into shared pages, and freed code re-used. That the pages were
# swapped is checked from outside, by valgrind's own word (-v: "Reading syms from" each
# jit-PID-N.elf it saw mapped executable; it reads symbols from nothing else), not only by
# the channel's count of swaps.
. "$(dirname "$0")/lib.sh"
require_tool valgrind valgrind
export JITHERALD=elfmap JITHERALD_DIR=$T/d JITHERALD_DEBUG=1
run() { # expected-output args...
    local want=$1; shift
    rm -rf "$T/d"
    valgrind -v --log-file="$T/vg" --error-exitcode=3 --tool=memcheck "$MINIJIT" "$@" \
        > "$T/out" 2> "$T/err" || { cat "$T/vg" "$T/err"; fail "memcheck exit $? for $*"; }
    cat "$T/err"
    grep -q '^==[0-9]*== ERROR SUMMARY: 0 errors from 0 contexts' "$T/vg" ||
        { cat "$T/vg"; fail "memcheck reported errors for $*"; }
    [ "$(sort -u "$T/out")" = "$want" ] || fail "$* printed $(cat "$T/out")"
    grep -E 'elfmap: [1-9][0-9]* swaps, 0 left anonymous' "$T/err"
    local pid images
    pid=$(sed -n 's/^==\([0-9]*\)== Memcheck, .*/\1/p' "$T/vg")
    images=$(grep -Eo "Reading syms from $T/d/jit-$pid-[0-9]+\\.elf\$" "$T/vg" | sort -u | wc -l)
    echo "valgrind read the symbols of $images image(s) of pid $pid"
    [ "$images" -ge 1 ] || { grep 'Reading syms' "$T/vg"; fail "valgrind mapped no jit-$pid-*.elf for $*"; }
}
fns() { # the functions the images' symbol tables name, sorted
    for f in "$T"/d/jit-*.elf; do readelf -sW "$f"; done | awk '$4 == "FUNC" { print $8 }' | sort -u | tr '\n' ' '
}
run 377 "$MINI/fib.mini" 14
[ "$(fns)" = "fib main " ] || fail "images name: $(fns)"
run 144 --remove --recompile "$MINI/fib.mini" 12
[ "$(fns)" = "fib main " ] || fail "images name: $(fns)"
run "$(JITHERALD= "$MINIJIT" --threads 3 "$MINI/calls.mini" | sort -u)" \
    --threads 3 "$MINI/calls.mini"
[ "$(fns)" = "a b c main " ] || fail "images name: $(fns)"
echo PASS
