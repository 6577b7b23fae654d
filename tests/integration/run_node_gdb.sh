#!/usr/bin/env bash
# run_node_gdb.sh — `jitherald run -c gdb -- gdb --args node ...`, a SIGTRAP raised from JS
# that V8 optimised the moment before (tests/run/node_trap.js), while other jobs keep both
# cores busy, 5 times with --perf-basic-prof --perf-prof and 5 with --perf-prof alone (V8
# buffers that file in 4 KiB): gdb's bt names the raising frame (JS:~kill, compiled at its
# first call, just before), its JS callers, the optimised one with the file:line V8's
# jitdump gives, and goes on to main with no `??` frame; and where V8's jitdump has a
# usable line table for node's own code, gdb has those lines (V8's +0x40 undone).
. "$(dirname "$0")/lib.sh"
require_tool node nodejs
require_tool gdb gdb
cd "$T"
cp "$R/tests/run/node_trap.js" .
keep_cores_busy
# At the stop: the first DEBUG_INFO of node's own code in the dump written so far, as gdb
# commands asking for its first row (0x40 before where V8 put it).
cat > pick.sh <<EOS
#!/bin/sh
d=\$(ls -t jit-*.dump | head -1)
"$CLI" inspect "\$d" 2>/dev/null | perl -ne '
    if (/DEBUG_INFO .* code 0x([0-9a-f]+)/) { \$c = hex \$1; next }
    if (\$c && /^\s+0x([0-9a-f]+) \(\+0x40\) (node:[a-z_\/]+):(\d+)\$/) {
        printf "echo ROW %s:%d\\\\n\ninfo line *0x%x\n", \$2, \$3, hex(\$1) - 0x40; exit }
    \$c = 0' > rows.gdb
EOS
chmod +x pick.sh
trap_bt() { # N FLAGS...: one run, its backtrace in bt.N
    local n=$1; shift
    timeout 120 "$CLI" run -c gdb -- gdb -q -batch -ex run -ex bt -ex 'shell ./pick.sh' \
        -ex 'source rows.gdb' -ex kill --args \
        node --no-concurrent-recompilation --allow-natives-syntax \
        --interpreted-frames-native-stack "$@" node_trap.js > "gdb.$n" 2>&1 || true
    grep -a '^#' "gdb.$n" > "bt.$n"
    local pid
    pid=$(sed -n 's/^\[Inferior 1 (process \([0-9]*\)) killed\]$/\1/p' "gdb.$n")
    [ -n "$pid" ] && at_exit "rm -f /tmp/perf-$pid.map jit-$pid.dump"
    grep -aq 'received signal SIGTRAP' "gdb.$n" || { cat "gdb.$n"; fail "run $n: no SIGTRAP"; }
    # where V8's jitdump has a usable line table for node's own code, gdb has those lines
    local row file line
    row=$(sed -n 's/^echo ROW \(.*\)\\n$/\1/p' rows.gdb)
    [ -n "$row" ] || fail "run $n: no DEBUG_INFO of node's own code in the dump"
    file=${row%:*} line=${row##*:}
    grep -aqE "^Line $line of \"$file\" +(starts at|is at) address" "gdb.$n" ||
        { grep -a -A2 "^ROW" "gdb.$n"; fail "run $n: gdb has no line $row where V8 gave it"; }
}
check_bt() { # N: what a user looks for in that backtrace
    local b=bt.$1 d
    d=$(pwd)
    grep -aqE ' in JS:~kill node:internal/process/per_thread:[0-9]+:[0-9]+ \(\)' "$b" ||
        { cat "$b"; fail "run $1: the raising frame (JS:~kill) is not named"; }
    grep -aqE " in JS:~trap $d/node_trap\.js:7:14 \(\)" "$b" ||
        { cat "$b"; fail "run $1: its caller trap() is not named"; }
    grep -aqE " in JS:\*outer $d/node_trap\.js:9:15 \(\) at $d/node_trap\.js:12\$" "$b" ||
        { cat "$b"; fail "run $1: optimised outer() is not named with trap()'s line, 12"; }
    grep -aqE " in JS:~ $d/node_trap\.js:1:1 \(\)" "$b" ||
        { cat "$b"; fail "run $1: the script's top level is not named"; }
    grep -aq ' in ?? ()' "$b" && { cat "$b"; fail "run $1: a ?? frame"; }
    grep -aqE ' in (__libc_start_call_main|main|_start) ' "$b" ||
        { cat "$b"; fail "run $1: bt does not reach main"; }
    grep -aq '[^ -~]' "$b" && { cat "$b"; fail "run $1: a frame with garbage bytes"; }
    return 0
}
for n in 1 2 3 4 5; do
    trap_bt "$n" --perf-basic-prof --perf-prof
    check_bt "$n"
    trap_bt "a$n" --perf-prof
    check_bt "a$n"
done
sed -n '1,14p' bt.1
echo "10 runs: the raising frame, its JS callers with lines, down to main"

echo PASS
