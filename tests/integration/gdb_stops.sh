#!/usr/bin/env bash
# gdb_stops.sh — what each new function costs a debugger that listens, counted in stops
# (every call of the hook is one: a ptrace round trip plus gdb's own work, ~0.3-0.6 ms
# here, which is most of what a JIT pays under gdb; issue 30). Immediate mode: the
# function's own image is registered before jh_code_add returns and unregistered when it
# merges, two stops at least; each merge adds one, and one more when its image merges in
# turn. One-function images merge by 64 (gdb.c, SINGLE_FANOUT): 1,000 functions take
# fewer than 2.05 stops each (merged by 16 they took 2.1). gdb counts them itself: a
# breakpoint on the hook, whose hit count is every call. And what the merges must keep: a
# breakpoint by name set before the run hits in its merged image with one location, the
# backtrace reaches JIT main, `info line` holds at the far end, and gdb holds few objfiles.
. "$(dirname "$0")/lib.sh"
require_tool gdb gdb
n=1000
awk -v n=$n 'BEGIN { for (i = 0; i < n; i++) printf "fn g%d(x) {\n    return x + %d\n}\n", i, i
    printf "fn main() {\n    return callback(g5(1) + g%d(1))\n}\n", n - 1 }' > "$T/p.mini"
# breakpoints: 1 g5, 2 the hook (counting only), 3 the callback main calls last
JITHERALD=gdb timeout 300 gdb -q -nx -batch -ex 'set breakpoint pending on' \
    -ex 'break g5' -ex 'break __jit_debug_register_code' -ex 'ignore 2 1000000000' \
    -ex 'break mj__builtin_callback' -ex run -ex bt -ex continue -ex 'info breakpoints' \
    -ex "info line g$((n - 2))" -ex 'maint info sections -all-objects' \
    --args "$MINIJIT" "$T/p.mini" > "$T/out" 2>&1 || true
grep -v -e '^ *\[' -e '^ *0x' "$T/out" | head -40
grep -Eq "^#0  g5 \(\) at .*p\.mini:17" "$T/out" || fail "breakpoint g5 not hit in its merged image"
grep -Eq "^#1  0x[0-9a-f]+ in main \(\) at .*p\.mini:$((3 * n + 2))" "$T/out" || fail "no JIT main below g5"
grep -Eq '^1 +breakpoint +keep y +0x[0-9a-f]+ in g5 at ' "$T/out" ||
    fail "breakpoint g5 not at one location (a function in two images?)"
grep -Eq "^Line $((3 * (n - 2) + 1)) of \".*p\.mini\" starts at address 0x[0-9a-f]+ <g$((n - 2))>" "$T/out" ||
    fail "info line g$((n - 2))"
# the hook's hit count: the line after breakpoint 2's row
stops=$(awk '/^[0-9]+ +breakpoint/ { bp = $1 } bp == 2 && /already hit/ { print $4; exit }' "$T/out")
[ -n "$stops" ] || fail "no hit count for the breakpoint on __jit_debug_register_code"
nobj=$(grep -c "Object file: .<in-memory" "$T/out" || true)
echo "$n functions: $stops debugger stops, $nobj JIT objfiles in gdb at the end"
[ "$stops" -ge $((2 * n - 64)) ] || fail "$stops stops: fewer than one registration per function?"
[ "$stops" -lt $((2 * n + n / 20)) ] || fail "$stops stops for $n functions: 2.05 per function or more"
[ "$nobj" -ge 1 ] && [ "$nobj" -le 64 ] || fail "$nobj JIT objfiles"
echo "PASS: $stops stops for $n functions, $nobj objfiles, breakpoint by name hit at one location"
