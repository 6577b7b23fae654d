#!/usr/bin/env bash
# Threads compiling into shared pages while elfmap swaps them: every page holding code is
# mapped from one of our files while the program waits, and the results are the same as
# without jitherald.
set -eu
B=$JH_BUILD; R=$JH_ROOT
T=$(mktemp -d); trap 'kill $vm 2>/dev/null || true; rm -rf "$T"' EXIT
M="$B/examples/minijit"
for prog in fib.mini calls.mini loops.mini; do
    args=(); [ $prog = fib.mini ] && args=(24)
    JITHERALD= "$M" --threads 4 --repeat 3 "$R/examples/minijit/$prog" "${args[@]}" | sort > "$T/plain"
    JITHERALD=elfmap JITHERALD_DIR=$T/d "$M" --threads 4 --repeat 3 "$R/examples/minijit/$prog" \
        "${args[@]}" | sort > "$T/elfmap"
    diff "$T/plain" "$T/elfmap" || { echo "FAIL: $prog differs with elfmap"; exit 1; }
    [ -s "$T/plain" ]
done
# While paused after compiling: the code pages are r-x mappings of our files, none anonymous.
JITHERALD=elfmap JITHERALD_DIR=$T/d2 "$M" --threads 4 --pause-file "$T/pause" \
    "$R/examples/minijit/calls.mini" > "$T/out" &
vm=$!
for _ in $(seq 200); do [ -s "$T/pause" ] && break; sleep 0.05; done
[ -s "$T/pause" ] || { echo "FAIL: minijit did not pause"; exit 1; }
grep -F "$T/d2/jit-" /proc/$vm/maps | tee "$T/maps"
grep -qE ' r-xp .*/jit-[0-9]+-[0-9]+\.elf$' "$T/maps"
# every executable anonymous mapping left would be JIT code that was not swapped
if awk '$2 ~ /x/ && NF == 5' /proc/$vm/maps | grep .; then echo "FAIL: anonymous code left"; exit 1; fi
rm "$T/pause"
wait $vm
JITHERALD= "$M" --threads 4 "$R/examples/minijit/calls.mini" | sort > "$T/plain"
sort "$T/out" | diff "$T/plain" -
echo PASS
