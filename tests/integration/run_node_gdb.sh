#!/usr/bin/env bash
# run_node_gdb.sh — `jitherald run -c gdb -- gdb --args node --perf-prof ...`: gdb's bt
# names V8's JIT frames, and where V8's jitdump gave a usable line table, gdb has the
# lines (V8's +0x40 undone). tests/run/node_spin.js spins in an optimized function until a
# worker thread sends SIGUSR2; gdb stops there with everything on the stack announced.
. "$(dirname "$0")/lib.sh"
require_tool node nodejs
require_tool gdb gdb
cd "$T"
cp "$R/tests/run/node_spin.js" .
# At the stop: the first DEBUG_INFO of node's own code in the dump read so far, as gdb
# commands asking for its first row (0x40 before where V8 put it).
cat > pick.sh <<EOS
#!/bin/sh
d=\$(ls jit-*.dump | head -1)
"$CLI" inspect "\$d" 2>/dev/null | perl -ne '
    if (/DEBUG_INFO .* code 0x([0-9a-f]+)/) { \$c = hex \$1; next }
    if (\$c && /^\s+0x([0-9a-f]+) \(\+0x40\) (node:[a-z_\/]+):(\d+)\$/) {
        printf "echo ROW %s:%d\\\\n\ninfo line *0x%x\n", \$2, \$3, hex(\$1) - 0x40; exit }
    \$c = 0' > rows.gdb
EOS
chmod +x pick.sh
"$CLI" run -c gdb -- gdb -q -batch -ex 'handle SIGUSR2 stop print' -ex run -ex 'thread 1' \
    -ex 'bt 3' -ex 'shell ./pick.sh' -ex 'source rows.gdb' -ex kill \
    --args node --perf-prof --perf-basic-prof node_spin.js > gdb.out 2>&1 || true
pid=$(ls jit-*.dump 2>/dev/null | sed -n 's/^jit-\([0-9]*\)\.dump$/\1/p' | head -1)
[ -n "$pid" ] && at_exit "rm -f /tmp/perf-$pid.map"
grep -a '^#' gdb.out
# V8 writes spin()'s line table right on some runs (the name, and the file:line of its
# inlined step()), garbage on others (the symbol, no lines).
grep -aqE '^#0 +0x[0-9a-f]+ in (JS:\*spin [^ ]*node_spin\.js:2:[0-9]+ \(\) at [^ ]*node_spin\.js:[0-9]+$|JS_spin_[A-Za-z0-9_]*node_spin_js_2_[0-9]+ \(\)$)' gdb.out ||
    { cat gdb.out; fail "gdb's frame 0 is not V8's optimized spin()"; }
grep -aq '[^ -~]' <(grep -a '^#' gdb.out) && fail "a frame with garbage bytes (V8's file names)"
cat rows.gdb
row=$(sed -n 's/^echo ROW \(.*\)\\n$/\1/p' rows.gdb)
[ -n "$row" ] || fail "no DEBUG_INFO of node's own code in the dump"
file=${row%:*} line=${row##*:}
grep -aE "^Line $line of \"$file\" +(starts at|is at) address" gdb.out ||
    { grep -a -A2 "^ROW" gdb.out; fail "gdb has no line $row where V8 gave it"; }
echo PASS
