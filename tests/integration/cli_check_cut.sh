#!/usr/bin/env bash
# cli_check_cut.sh — `jitherald check` on a jitdump whose last record is cut short, as a
# node run ended by exit or Ctrl-C leaves it (V8 writes its dump through a 4 KiB stdio
# buffer): a warning naming how many records (and LOADs) are usable, exit 0, and that count
# is what perf inject --jit makes of the file; --strict still fails it. A file broken
# elsewhere (its header cut, a malformed record with bytes after it, a last record whose
# sizes cannot be a cut one) still fails. On a real node jitdump, cut at a record boundary
# plus a few bytes, and on one of the demo JIT's.
. "$(dirname "$0")/lib.sh"
require_tool perf linux-perf
require_tool node nodejs
private_perf_cache
cd "$T"

# The records of a jitdump as "INDEX OFFSET KIND" lines, from inspect.
records() { "$CLI" inspect "$1" 2>/dev/null | perl -ne 'print $n++, " ", hex($1), " $2\n" if /^0x([0-9a-f]+) ([A-Z_]+) /'; }
# check FILE, cut: exit 0 and the warning; --strict: exit 1. $1 file, $2 usable records,
# $3 of them LOADs.
cut_ok() {
    local rc=0
    "$CLI" check "$1" >out 2>err || rc=$?
    [ $rc = 0 ] || { cat out err; fail "$1: exit $rc for a dump cut in its last record"; }
    grep -Eq ": $2 records? \($3 LOAD\) (is|are) usable.*\(truncated\)$" err ||
        { cat err; fail "$1: no warning naming $2 usable records ($3 LOAD)"; }
    rc=0
    "$CLI" check --strict "$1" >/dev/null 2>&1 || rc=$?
    [ $rc = 1 ] || fail "$1: check --strict exits $rc for a cut dump, want 1"
    echo "ok: $1: $(grep -o 'the .*usable' err)"
}
broken() { # file regex: still an error
    local rc=0
    "$CLI" check "$1" >out 2>&1 || rc=$?
    [ $rc = 1 ] && grep -Eq "$2" out || { cat out; fail "$1: exit $rc, want 1 and /$2/"; }
    echo "ok: $1 still refused: $(sed "s|^jitherald check: $1: ||" out | head -1)"
}
cutat() { head -c "$2" "$1" > "$3"; }

# 1. node, recorded by perf, its dump complete
cat > work.js <<'JS'
function f(x) { let s = 0; for (let i = 0; i < x; i++) s += i * i; return s; }
let t = 0; for (let k = 0; k < 3000; k++) t += f(k);
console.log(t);
JS
perf record -q -k 1 -o perf.data node --perf-prof work.js > node.out 2>&1 ||
    { cat node.out; fail "perf record node --perf-prof"; }
dump=$(ls jit-*.dump); pid=${dump#jit-}; pid=${pid%.dump}
mv "$dump" full.dump
records full.dump > recs
n=$(wc -l < recs)
[ "$n" -gt 1000 ] || fail "node wrote only $n records"
# a LOAD in the middle, and the record after it
read -r li lo _ < <(awk -v h=$((n / 2)) '$3 == "LOAD" && $1 >= h' recs | head -1)
read -r ni no nk < <(awk -v i=$((li + 1)) '$1 == i' recs)
loads_before() { awk -v i="$1" '$1 < i && $3 == "LOAD"' recs | wc -l; }

# cut 5 bytes into the record after a LOAD (inside its prefix): every record before it
cutat full.dump $((no + 5)) "jit-$pid.dump"
cut_ok "jit-$pid.dump" "$ni" "$(loads_before "$ni")"
# cut 30 bytes into the next LOAD: the DEBUG_INFO/UNWINDING_INFO before it are its own,
# so not usable
read -r ci co _ < <(awk -v i="$ni" '$1 >= i && $3 == "LOAD"' recs | head -1)
pend=$(awk -v a="$li" -v b="$ci" '$1 > a && $1 < b' recs | wc -l)
cutat full.dump $((co + 30)) "jit-$pid.dump"
usable=$((ci - pend)); nl=$(loads_before "$ci")
cut_ok "jit-$pid.dump" "$usable" "$nl"
# and perf reads those LOADs from it, as check says
perf inject --jit -i perf.data -o inj.data > inject.out 2>&1 || { cat inject.out; fail "perf inject"; }
so=$(ls | grep -c "^jitted-$pid-[0-9]*\.so$" || true)
[ "$so" = "$nl" ] || fail "check says $nl LOADs are usable, perf inject wrote $so jitted-*.so"
echo "ok: perf inject --jit wrote $so functions from the cut dump, as check said"

# 2. node, cut elsewhere: still errors
cutat full.dump 20 head.dump
broken head.dump 'header'
perl -e 'open F, "<", $ARGV[0]; binmode F; local $/; $d = <F>;
         substr($d, $ARGV[1] + 4, 4) = pack("V", 8); print $d' full.dump "$lo" > mid.dump
broken mid.dump "offset 0x$(printf %x "$lo"): record id 0 has total_size 8"
# a malformed record before the cut: the cut does not excuse it
cutat mid.dump $((no + 5)) midcut.dump
broken midcut.dump "offset 0x$(printf %x "$lo"): "
# the last LOAD's code_size larger than its record: a garbage size, not a cut
perl -e 'open F, "<", $ARGV[0]; binmode F; local $/; $d = <F>;
         substr($d, $ARGV[1] + 40, 8) = pack("Q<", 1 << 40); print substr($d, 0, $ARGV[1] + 60)' \
    full.dump "$co" > badsize.dump
broken badsize.dump "offset 0x$(printf %x "$co"): LOAD of [0-9]+ bytes"

# 3. the demo JIT's dump (DEBUG_INFO, UNWINDING_INFO, LOAD per function, then CLOSE), cut
# in its CLOSE and in the second function's DEBUG_INFO
JITHERALD=jitdump JITHERALD_DIR=$T/mj "$MINIJIT" "$MINI/calls.mini" > /dev/null || fail "minijit"
mj=$(ls "$T"/mj/jit-*.dump)
records "$mj" > recs
n=$(wc -l < recs)
read -r _ co _ < <(awk '$3 == "CLOSE"' recs)
cutat "$mj" $((co + 9)) mjclose.dump
cut_ok mjclose.dump $((n - 1)) "$(awk '$3 == "LOAD"' recs | wc -l)"
read -r di do _ < <(awk '$3 == "DEBUG_INFO" && $1 > 0' recs | head -1)
cutat "$mj" $((do + 40)) mjdebug.dump
cut_ok mjdebug.dump "$di" "$(loads_before "$di")"
echo PASS
