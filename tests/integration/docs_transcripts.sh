#!/usr/bin/env bash
# docs_transcripts.sh — the sessions the docs show are what the tools print today, so the
# docs cannot drift from the code (a line number in minijit.c, a command that stopped
# working):
#   docs/gdb.md: the opening backtrace (`break c`, `run`, `bt`) — each frame's function
#       and file:line must be what gdb prints now (addresses and arguments aside);
#   docs/auditlog-format.md: the Example's commands, run twice in a row as a reader would
#       paste them, must succeed both times and print the records it shows.
. "$(dirname "$0")/lib.sh"
require_tool gdb gdb

# --- gdb.md: "#N  [0xADDR in] FN (...) at FILE:LINE" -> "N FN FILE:LINE"
frames() { sed -nE 's/^#([0-9]+) +(0x[0-9a-f]+ in )?([A-Za-z_][A-Za-z0-9_]*) \(.*\) at (.*:[0-9]+)$/\1 \3 \4/p'; }
awk '/^```/{n++; next} n==1' "$R/docs/gdb.md" | frames > "$T/doc.bt"
[ "$(wc -l < "$T/doc.bt")" -ge 5 ] || fail "docs/gdb.md's opening session has no backtrace: $(cat "$T/doc.bt")"
(cd "$R" && JITHERALD=gdb timeout 120 gdb -q -nx -batch -ex 'set breakpoint pending on' \
    -ex 'set pagination off' -ex 'break c' -ex run -ex bt \
    --args ./build/examples/minijit examples/minijit/calls.mini 2>&1) > "$T/gdb.out"
frames < "$T/gdb.out" | head -n "$(wc -l < "$T/doc.bt")" > "$T/real.bt"
diff "$T/doc.bt" "$T/real.bt" ||
    fail "docs/gdb.md's backtrace (<) differs from gdb's (>): update the doc; gdb printed: $(cat "$T/gdb.out")"

# --- auditlog-format.md: the Example's "$ " lines, twice, in a directory of our own
awk '/^## Example/{e=1} e && /^```/{n++; next} e && n==1' "$R/docs/auditlog-format.md" \
    > "$T/example.txt"
sed -n 's/^\$ //p' "$T/example.txt" > "$T/example.sh"
[ "$(wc -l < "$T/example.sh")" -ge 2 ] || fail "no commands in docs/auditlog-format.md's Example"
for run in 1 2; do
    (cd "$R" && JITHERALD_DIR=$T/logs bash -e "$T/example.sh") > "$T/run$run.out" 2>&1 ||
        fail "docs/auditlog-format.md's Example fails on run $run: $(cat "$T/run$run.out")"
    # every record kind the doc shows, with the function it names
    for kind in header code_add memory event; do
        want=$(grep -E "^ +[0-9]+ +[0-9.]+ +[0-9]+ +$kind " "$T/example.txt" | head -1 |
               awk '{print $4}')
        [ -n "$want" ] || fail "the doc shows no $kind record"
        grep -Eq "^ +[0-9]+ +[0-9.]+ +[0-9]+ +$kind " "$T/run$run.out" ||
            fail "run $run prints no $kind record: $(head -5 "$T/run$run.out")"
    done
    grep -Eq 'code_add +#1 fib 0x[0-9a-f]+ [0-9]+ B examples/minijit/fib.mini:[0-9]+' "$T/run$run.out" ||
        fail "run $run: no code_add of fib with its source line"
done
echo PASS
