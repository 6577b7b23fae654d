#!/usr/bin/env bash
# Many functions under gdb stay cheap because they are packed into few objfiles. Counted by
# gdb itself (`maint info sections -all-objects` lists every objfile): 50,000 functions in
# deferred mode and 5,000 in the default immediate mode give at most a few dozen JIT
# objfiles, and names and lines are right at the far end.
# Then the demo JIT removes every function one by one (--remove) under gdb: big images are
# not rebuilt per removal (that took ~5 ms each with gdb attached). Counted, not timed (a
# busy machine makes any time bound wrong): gdb counts the hits of a breakpoint on
# __jit_debug_register_code set for the removals; a rebuild per removal is two calls each
# (register the new image, unregister the old), so fewer than one per two removals.
. "$(dirname "$0")/lib.sh"
require_tool gdb gdb

gen() { # n file: n functions g0..g{n-1}, 3 lines each, then main calling the last one
    local n=$1
    awk -v n="$n" 'BEGIN { for (i = 0; i < n; i++) printf "fn g%d(x) {\n    return x + %d\n}\n", i, i
        printf "fn main() {\n    return callback(g%d(1))\n}\n", n - 1 }' > "$2"
}

run() { # name n defer max-objfiles
    local name=$1 n=$2 defer=$3 maxobj=$4 mid=$(($2 / 2))
    gen "$n" "$T/$name.mini"
    local t0=$SECONDS
    # (breakpoint 1 is the callback; numbers are never reused, so the counting one is 2)
    JITHERALD=gdb JITHERALD_GDB_DEFER=$defer timeout 600 gdb -q -nx -batch \
        -ex 'break mj__builtin_callback' -ex run -ex bt -ex "info line g$mid" \
        -ex 'maint info sections -all-objects' -ex 'delete' \
        -ex 'break __jit_debug_register_code' -ex 'ignore 2 1000000000' -ex continue \
        -ex 'echo REMOVED\n' -ex 'info breakpoints' \
        --args "$MINIJIT" --remove "$T/$name.mini" > "$T/$name" 2>&1 || true
    local dt=$((SECONDS - t0)) nobj calls
    nobj=$(grep -c "Object file: .<in-memory" "$T/$name" || true)
    grep -v -e '^ *\[' -e '^ *0x' "$T/$name" | head -30
    echo "$name: $n functions, $nobj JIT objfiles in gdb (${dt}s, for information)"
    grep -Eq "^#1  0x[0-9a-f]+ in main \(\) at .*$name\.mini:$((3 * n + 2))\$" "$T/$name"
    grep -Eq "^Line $((3 * mid + 1)) of \".*$name\.mini\" starts at address 0x[0-9a-f]+ <g$mid>" "$T/$name"
    [ "$nobj" -ge 1 ] && [ "$nobj" -le "$maxobj" ] || fail "$nobj objfiles"
    grep -q "exited normally" "$T/$name"            # then removed everything, one by one
    grep -Eq '^2 +breakpoint +keep y .* in __jit_debug_register_code ' "$T/$name" ||
        fail "$name: no counting breakpoint on __jit_debug_register_code"
    calls=$(sed -n '/^REMOVED$/,$ s/^.*breakpoint already hit \([0-9]*\) time.*/\1/p' "$T/$name")
    echo "$name: removing all $n one by one: ${calls:-0} calls of __jit_debug_register_code"
    [ "${calls:-0}" -ge 1 ] && [ "$calls" -lt $((n / 2)) ] ||
        fail "$name: ${calls:-0} debugger stops for $n removals: images rebuilt per removal"
    ! grep -q 'Unable to find JITed code' "$T/$name" || fail "$name: Unable to find JITed code"
    echo "PASS $name"
}

run deferred 50000 1 60
run immediate 5000 0 60      # rebuilding big images per removal took 11 s here
