#!/usr/bin/env bash
# run_node_auditlog.sh — `jitherald run -c auditlog -- node ...`: V8's builtins, which lie
# in node's own text, are recorded by reference to node's file (build-id, offset), not
# copied (docs/auditlog-format.md, "Code recorded by reference"): `jitherald log info` says
# they were read back from node's file; `show` disassembles a builtin with exactly the
# bytes objdump shows at that address of node, and JS code compiled at run time with the
# bytes the log copied; the log is smaller than the builtins' code; a log naming another
# build-id for node is said (both ids) and shows no bytes; JITHERALD_AUDITLOG_REFS=0
# copies the builtins into the log again. The builtins reach the log in batches
# (jh_code_add_many: JITHERALD_RUN_STATS says batches=), all of them.
. "$(dirname "$0")/lib.sh"
require_tool node nodejs
require_tool objdump binutils
cd "$T"
export JITHERALD_DIR=$T/d
NODE=$(command -v node)
NODE=$(readlink -f "$NODE")
JS='function f(n) { return n < 2 ? n : f(n - 1) + f(n - 2) } console.log(f(25))'
run_node() { # OUT-NAME: one run, its log copied to OUT-NAME
    rm -rf "$JITHERALD_DIR"
    JITHERALD_RUN_STATS=$T/stats.$1 "$CLI" run -c auditlog -- node --perf-basic-prof --perf-prof -e "$JS" > node.out
    grep -qx 75025 node.out || fail "node did not run: $(cat node.out)"
    local log
    log=$(ls "$JITHERALD_DIR"/*.jhlog | head -1)
    local pid=${log##*-}
    pid=${pid%.jhlog}
    at_exit "rm -f /tmp/perf-$pid.map"
    rm -f "jit-$pid.dump"
    cp "$log" "$1"
}
run_node ref.jhlog
"$CLI" log ref.jhlog info > info.out
cat info.out
id=$(readelf -n "$NODE" 2>/dev/null | sed -n 's/.*Build ID: \([0-9a-f]*\).*/\1/p' | head -1)
[ -n "$id" ] || skip "$NODE has no build-id"
n=$(sed -n "s|^code of \([0-9]*\) function(s) recorded as lying in $NODE, build-id $id: read from $NODE\$|\1|p" info.out)
[ -n "$n" ] && [ "$n" -ge 1000 ] || fail "info does not say node's builtins were read from $NODE"
# handed over in batches of at most 1,024: at least two for node's ~2,200
b=$(sed -n 's/.* batches=\([0-9]*\) .*/\1/p' "$T/stats.ref.jhlog" | sort -n | tail -1)
[ -n "$b" ] && [ "$b" -ge 2 ] || { cat "$T/stats.ref.jhlog"; fail "the builtins were not handed over in batches (batches=${b:-none})"; }

# a builtin: the bytes show prints are node's own at that address (objdump's)
"$CLI" log ref.jhlog code > code.out
read -r addr size < <(awk '$5 == "Builtin:ArrayPrototypePush" { print $6, $7; exit }' code.out)
[ -n "${addr:-}" ] || { head code.out; fail "no Builtin:ArrayPrototypePush in the log"; }
"$CLI" log ref.jhlog show Builtin:ArrayPrototypePush > show.out 2> show.err
grep -q "^  code: $NODE at offset 0x[0-9a-f]*, build-id $id: read from $NODE\$" show.out ||
    { head -3 show.out; fail "show does not say where the builtin's bytes came from"; }
stop=$(printf '0x%x' $((addr + 32)))
objdump -d --start-address="$addr" --stop-address="$stop" "$NODE" |
    sed -n 's/^ *[0-9a-f]*:\t\(\([0-9a-f][0-9a-f] \)*\).*/\1/p' | tr -d ' \n' > want.hex
# the first 32 bytes as show prints them (disassembly: a bytes column; without capstone: hex)
awk '/^ +[0-9a-f]+: / { for (i = 2; i <= NF && $i ~ /^[0-9a-f][0-9a-f]$/; i++) printf "%s", $i }' \
    show.out | head -c "$(wc -c < want.hex)" > got.hex
[ -s want.hex ] && cmp -s want.hex got.hex ||
    { echo "objdump: $(cat want.hex)"; echo "show:    $(cat got.hex)"; fail "the builtin's bytes are not node's"; }
# JS code compiled at run time: still copied into the log
js=$(awk '$5 ~ /^JS:/ { for (i = 6; i <= NF; i++) if ($i ~ /^0x/) { print $i; exit } }' code.out)
[ -n "$js" ] || { tail code.out; fail "no JS function in the log"; }
"$CLI" log ref.jhlog show "$js" > js.out 2>&1
grep -q '^  code:' js.out && fail "the JS function at $js (JIT code) was recorded by reference"
grep -qE '^ +[0-9a-f]+: ' js.out || { cat js.out; fail "the JS function at $js shows no code"; }
# the log holds less than the builtins' code
total=$(awk '$5 ~ /^Builtin:/ { s += $7 } END { print s + 0 }' code.out)
bytes=$(stat -c %s ref.jhlog)
[ "$bytes" -lt "$total" ] || fail "the log ($bytes bytes) is not smaller than the builtins' code ($total)"
echo "$n builtins read from $NODE: $total bytes of code, a log of $bytes bytes"

# a log naming another build-id for node: said, no bytes shown
perl -0777 -pe "s/\\Q$(echo "$id" | perl -ne 'chomp; print pack("H*", $_)')\\E/'x' x length(\$&)/ge" \
    ref.jhlog > other.jhlog
other=$(printf 'x%.0s' $(seq 1 $(( ${#id} / 2 ))) | od -An -tx1 | tr -d ' \n')
"$CLI" log other.jhlog show Builtin:ArrayPrototypePush > oshow.out 2> oshow.err
grep -qF "build-id $other: not read ($NODE: build-id $id, not $other)" oshow.out ||
    { head -3 oshow.out; fail "show does not say node's file has another build-id"; }
grep -q "recorded as lying in $NODE, build-id $other: 0 read.*build-id $id, not $other" oshow.err ||
    { cat oshow.err; fail "the mismatch is not said on stderr"; }
grep -qE '^ +[0-9a-f]+: ' oshow.out && fail "bytes shown for a file with another build-id"

# JITHERALD_AUDITLOG_REFS=0: copied again
JITHERALD_AUDITLOG_REFS=0 run_node copy.jhlog
"$CLI" log copy.jhlog info | grep -q 'recorded as lying' && fail "REFS=0 still recorded by reference"
cbytes=$(stat -c %s copy.jhlog)
[ "$cbytes" -gt "$total" ] || fail "REFS=0: the log ($cbytes bytes) does not hold the builtins ($total)"
"$CLI" log copy.jhlog show Builtin:ArrayPrototypePush | grep -q '^  code:' &&
    fail "REFS=0: show says the builtin is in a file"
echo "JITHERALD_AUDITLOG_REFS=0: a log of $cbytes bytes"
echo PASS
