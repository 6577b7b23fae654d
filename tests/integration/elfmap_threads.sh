#!/usr/bin/env bash
# Threads compiling into shared pages while elfmap swaps them: every page holding code is
# mapped from one of our files while the program waits, and the results are the same as
# without jitherald.
. "$(dirname "$0")/lib.sh"
M=$MINIJIT
for prog in fib.mini calls.mini loops.mini; do
    args=(); [ $prog = fib.mini ] && args=(24)
    JITHERALD= "$M" --threads 4 --repeat 3 "$MINI/$prog" "${args[@]}" | sort > "$T/plain"
    JITHERALD=elfmap JITHERALD_DIR=$T/d "$M" --threads 4 --repeat 3 "$MINI/$prog" \
        "${args[@]}" | sort > "$T/elfmap"
    diff "$T/plain" "$T/elfmap" || fail "$prog differs with elfmap"
    [ -s "$T/plain" ]
done
# While paused after compiling: the code pages are r-x mappings of our files, none anonymous.
JITHERALD=elfmap JITHERALD_DIR=$T/d2 "$M" --threads 4 --pause-file "$T/pause" \
    "$MINI/calls.mini" > "$T/out" &
vm=$!
kill_at_exit $vm
wait_for_file "$T/pause"
grep -F "$T/d2/jit-" /proc/$vm/maps | tee "$T/maps"
grep -qE ' r-xp .*/jit-[0-9]+-[0-9]+\.elf$' "$T/maps"
# every executable anonymous mapping left would be JIT code that was not swapped
! awk '$2 ~ /x/ && NF == 5' /proc/$vm/maps | grep . || fail "anonymous code left"
rm "$T/pause"
wait $vm
JITHERALD= "$M" --threads 4 "$MINI/calls.mini" | sort > "$T/plain"
sort "$T/out" | diff "$T/plain" -
echo PASS
