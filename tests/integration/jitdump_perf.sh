#!/usr/bin/env bash
# jitdump_perf.sh — the jitdump channel end to end with the real perf:
#   JITHERALD=jitdump perf record -k 1 -g minijit fib.mini
#   perf inject --jit; perf report --sort sym,srcline; perf annotate fib
# Asserts what a user looks for: fib by name with fib.mini:LINE of its body, the caller
# chain through the JIT frames (frame pointers), perf annotate disassembling fib next to
# its source, and the exact line table in perf's synthetic ELF (rows start at .text, so no
# stale +0x40). `jitherald check` must accept the dump and its -q mode must stay silent;
# a version-2 header or an unknown flag bit, which check refuses, perf refuses as well.
. "$(dirname "$0")/lib.sh"
require_tool perf linux-perf
private_perf_cache
FIB=$MINI/fib.mini
cd "$T"
export JITHERALD=jitdump JITHERALD_DIR=$T/jd JITHERALD_DEBUG=1

perf record -q -k 1 -F 2000 -g -o perf.data "$MINIJIT" "$FIB" 32 >run.out 2>run.err ||
    { cat run.err; fail "perf record"; }
grep -qx 2178309 run.out || fail "wrong fib result: $(cat run.out)"
grep -i 'jitdump' run.err && fail "the channel reported a problem"
dump=$(ls jd/jit-*.dump)
[ "$(stat -c %a "$dump")" = 600 ] || fail "$dump is not mode 0600"
"$CLI" check "$dump" || fail "jitherald check refuses our own file"
[ -z "$("$CLI" check -q "$dump" 2>&1)" ] || fail "check -q is not quiet on a good file"
"$CLI" inspect "$dump" >inspect.out || fail "jitherald inspect"
grep -Eq 'LOAD .* fib$' inspect.out || { cat inspect.out; fail "inspect does not list fib"; }
grep -q 'fib.mini:6' inspect.out || fail "inspect shows no line table"
grep -q 'FDE @0x18: pc 0x80\.\.' inspect.out || fail "inspect shows no unwind table"

perf inject --jit -i perf.data -o perf.jit.data 2>inject.err || { cat inject.err; fail "perf inject"; }
so=$(grep -l 'fib' jd/jitted-*.so | head -1)
[ -n "$so" ] || fail "perf inject wrote no jitted-*.so for fib"

# 1. Names and source lines. fib's body is lines 5-8 of fib.mini.
perf report -i perf.jit.data --stdio --no-children --sort sym,srcline -g none >srcline.out 2>/dev/null
# (shares, not ranks: on a virtual machine kernel rows may come first)
fibpct=$(share srcline.out '\[\.\] fib +fib\.mini:[5-8] *$' '\[\.\]')
[ "$fibpct" -ge 50 ] || { cat srcline.out; fail "fib at fib.mini:5-8 has only $fibpct% of the user-space samples"; }
only srcline.out '\[\.\] fib +fib\.mini:[5-8] *$' '\[\.\] fib ' ||
    { cat srcline.out; fail "fib samples outside its body's lines (fib.mini:5-8)"; }

# 2. Frame-pointer call chains through JIT frames reach the JIT main and the C caller.
perf report -i perf.jit.data --stdio --children --sort sym -g caller >chain.out 2>/dev/null
grep -Eq '\[\.\] main *$' chain.out || fail "JIT main missing from the call chains"
grep -Eq '\[\.\] mj_call *$' chain.out || fail "the C caller missing from the call chains"
perf report -i perf.jit.data --stdio --no-children --sort sym -G >callee.out 2>/dev/null
awk '/\[\.\] fib *$/ { f = 1 } f && /mj_call/ { ok = 1 } END { exit !ok }' callee.out ||
    { head -40 callee.out; fail "fib's call graph does not reach mj_call"; }

# 3. perf annotate: fib disassembled next to its source.
perf annotate -i perf.jit.data --stdio fib >annotate.out 2>&1 || true
grep -q 'push   %rbp' annotate.out || { head -30 annotate.out; fail "perf annotate does not disassemble fib"; }
grep -q 'fn fib(n)' annotate.out || { head -30 annotate.out; fail "perf annotate shows no source"; }

# 4. The line table perf built from our DEBUG_INFO: first row exactly at .text.
secaddr() { readelf -SW "$so" | awk -v n="$1" '{ for (i = 1; i < NF; i++) if ($i == n) { print $(i + 2); exit } }'; }
text=$(secaddr .text)
first=$(readelf -wL "$so" | awk '/fib\.mini +[0-9]+ +0x/ { print $3; exit }')
[ -n "$text" ] && [ $((0x$text)) -eq $(($first)) ] ||
    { readelf -SW "$so"; readelf -wL "$so"; fail "line table starts at $first, .text at 0x$text"; }
eh=$(secaddr .eh_frame)
readelf -wf "$so" | grep -q "pc=0*$text\.\." || { readelf -wf "$so"; fail ".eh_frame FDE does not cover .text"; }
# 5. What `jitherald check` calls fatal, perf 6.1 refuses too: version 2, an unknown flag.
rm -f jd/jitted-*.so
printf '\x02' | dd of="$dump" bs=1 seek=4 conv=notrunc 2>/dev/null
"$CLI" check -q "$dump" >/dev/null 2>&1 && fail "check accepts version 2"
perf inject -v --jit -i perf.data -o v2.data >v2.err 2>&1 || true
grep -q 'wrong jitdump version 2' v2.err || { cat v2.err; fail "perf accepted version 2?"; }
[ -z "$(ls jd | grep jitted)" ] || fail "perf inject used a version-2 dump"
printf '\x01' | dd of="$dump" bs=1 seek=4 conv=notrunc 2>/dev/null
printf '\x02' | dd of="$dump" bs=1 seek=32 conv=notrunc 2>/dev/null
"$CLI" check -q "$dump" >/dev/null 2>&1 && fail "check accepts flag bit 1"
perf inject -v --jit -i perf.data -o fl.data >fl.err 2>&1 || true
grep -q 'invalid or unsupported flags' fl.err || { cat fl.err; fail "perf accepted an unknown flag?"; }

echo "PASS: fib $fibpct% of the user-space samples, all on fib.mini:5-8, chains through JIT frames, annotate, lines at .text 0x$text, .eh_frame at 0x$eh"
