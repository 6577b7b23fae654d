#!/usr/bin/env bash
# Many functions under gdb stay cheap because they are packed into few objfiles. Counted by
# gdb itself (`maint info sections -all-objects` lists every objfile): 50,000 functions in
# deferred mode and 5,000 in the default immediate mode give at most a few dozen JIT
# objfiles, the run finishes in bounded time, and names and lines are right at the far end.
# Then the demo JIT removes every function one by one (--remove) under gdb: big images are
# not rebuilt per removal (that took ~5 ms each with gdb attached).
. "$(dirname "$0")/lib.sh"
require_tool gdb gdb

gen() { # n file: n functions g0..g{n-1}, 3 lines each, then main calling the last one
    local n=$1
    awk -v n="$n" 'BEGIN { for (i = 0; i < n; i++) printf "fn g%d(x) {\n    return x + %d\n}\n", i, i
        printf "fn main() {\n    return callback(g%d(1))\n}\n", n - 1 }' > "$2"
}

run() { # name n defer max-objfiles max-seconds max-seconds-for-removing
    local name=$1 n=$2 defer=$3 maxobj=$4 maxsec=$5 maxrm=$6 mid=$(($2 / 2))
    gen "$n" "$T/$name.mini"
    local t0=$SECONDS
    JITHERALD=gdb JITHERALD_GDB_DEFER=$defer timeout 300 gdb -q -nx -batch \
        -ex 'break mj__builtin_callback' -ex run -ex bt -ex "info line g$mid" \
        -ex 'maint info sections -all-objects' -ex 'delete' \
        -ex "shell echo T1 \$(date +%s%N) >> $T/$name.t" -ex continue \
        -ex "shell echo T2 \$(date +%s%N) >> $T/$name.t" \
        --args "$MINIJIT" --remove "$T/$name.mini" > "$T/$name" 2>&1 || true
    local dt=$((SECONDS - t0)) nobj
    nobj=$(grep -c "Object file: .<in-memory" "$T/$name" || true)
    grep -v -e '^ *\[' -e '^ *0x' "$T/$name" | head -30
    echo "$name: $n functions, $nobj JIT objfiles in gdb, ${dt}s"
    grep -Eq "^#1  0x[0-9a-f]+ in main \(\) at .*$name\.mini:$((3 * n + 2))\$" "$T/$name"
    grep -Eq "^Line $((3 * mid + 1)) of \".*$name\.mini\" starts at address 0x[0-9a-f]+ <g$mid>" "$T/$name"
    [ "$nobj" -ge 1 ] && [ "$nobj" -le "$maxobj" ] || fail "$nobj objfiles"
    [ "$dt" -le "$maxsec" ] || fail "took ${dt}s"
    grep -q "exited normally" "$T/$name"            # then removed everything, one by one
    # (the times go to a file of their own: run as a non-root user, gdb's buffered output
    # of `maint info sections` landed over the shell's T1 line in the shared output file)
    local rm_ms=$(( ($(sed -n 's/^T2 //p' "$T/$name.t") - $(sed -n 's/^T1 //p' "$T/$name.t")) / 1000000 ))
    echo "$name: removing all $n one by one under gdb (and exiting): ${rm_ms} ms"
    [ "$rm_ms" -le $((maxrm * 1000)) ] || fail "removal too slow"
    ! grep -q 'Unable to find JITed code' "$T/$name" || fail "$name: Unable to find JITed code"
    echo "PASS $name"
}

run deferred 50000 1 60 120 20
run immediate 5000 0 60 150 5      # rebuilding big images per removal took 11 s here
