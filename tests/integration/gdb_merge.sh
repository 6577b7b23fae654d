#!/usr/bin/env bash
# gdb_merge.sh — while a debugger listens, full images merge into bigger ones, so the
# objfiles gdb holds do not grow with the number of functions (each registration costs gdb
# a little for every objfile, more with a breakpoint set by name: issue 11, item 11, at
# 100,000 functions). Images of 64 functions (JITHERALD_GDB_BATCH=32) make that visible
# with 3,000: gdb counts the JIT objfiles itself (`maint info sections -all-objects`),
# a breakpoint set by name before the run, in code now in a merged image, is hit, and
# names and lines hold at both ends.
. "$(dirname "$0")/lib.sh"
require_tool gdb gdb
n=3000
awk -v n=$n 'BEGIN { for (i = 0; i < n; i++) printf "fn g%d(x) {\n    return x + %d\n}\n", i, i
    printf "fn main() {\n    return callback(g5(1) + g%d(1))\n}\n", n - 1 }' > "$T/p.mini"
JITHERALD=gdb JITHERALD_GDB_BATCH=32 timeout 300 gdb -q -nx -batch \
    -ex 'set breakpoint pending on' -ex 'break g5' -ex 'break mj__builtin_callback' -ex run \
    -ex bt -ex continue -ex bt -ex "info line g$((n - 2))" -ex 'maint info sections -all-objects' \
    --args "$MINIJIT" "$T/p.mini" > "$T/out" 2>&1 || true
nobj=$(grep -c "Object file: .<in-memory" "$T/out" || true)
grep -v -e '^ *\[' -e '^ *0x' "$T/out" | head -20
echo "$n functions in images of 32: $nobj JIT objfiles in gdb"
grep -Eq "^#0  g5 \(\) at .*p\.mini:17" "$T/out" || fail "breakpoint g5 not hit in its merged image"
grep -Eq "^#1  0x[0-9a-f]+ in main \(\) at .*p\.mini:$((3 * n + 2))" "$T/out" || fail "no JIT main below g5"
grep -Eq "^Line $((3 * (n - 2) + 1)) of \".*p\.mini\" starts at address 0x[0-9a-f]+ <g$((n - 2))>" "$T/out" ||
    fail "info line g$((n - 2))"
# without merging: 3000 / 32 = 94 full images, plus the small classes; with: at most 15
# full ones, about 3000 / 128 merged ones, and the small classes (at most 15 each)
[ "$nobj" -ge 1 ] && [ "$nobj" -le 75 ] || fail "$nobj JIT objfiles: full images did not merge"
echo "PASS: $nobj objfiles for $n functions, breakpoint by name hit in a merged image"
