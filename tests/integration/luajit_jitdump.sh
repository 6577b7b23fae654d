#!/usr/bin/env bash
# `JITHERALD=jitdump perf record -k 1 luajit -l jitherald` + `perf inject --jit`: perf
# report names the hot trace, with most of the samples in traces, and the source lines of
# its samples (the per-guard line table: all on the loop's lines), every trace got a LOAD,
# and perf annotate shows the trace's machine code beside the Lua source.
. "$(dirname "$0")/lib.sh"
require_tool perf linux-perf
luajit_adapter
private_perf_cache
cp "$LUAJIT_SCRIPTS/hot.lua" "$T/"
cd "$T"
export JITHERALD=jitdump JITHERALD_DIR=$T/jd
perf record -q -k 1 -e cpu-clock -F 5000 -o perf.data -- luajit -jv -l jitherald hot.lua 100 \
    >out 2>jv || fail "perf record: $(cat jv)"
grep -q '^total	true$' out || fail "script output: $(cat out)"
dump=$(ls jd/jit-*.dump)
"$CLI" check "$dump" || fail "jitherald check refuses the dump"
"$CLI" inspect "$dump" >inspect.out || fail "jitherald inspect"
ntr=$(grep -Ec '^\[TRACE +[0-9]' jv)
# (a patched parent may be loaded again: count the traces that have a LOAD)
nload=$(grep -Eo 'LOAD .* TRACE_[0-9]+ hot\.lua:[0-9]+$' inspect.out | grep -Eo 'TRACE_[0-9]+' | sort -u | wc -l)
[ "$nload" -eq "$ntr" ] || { cat jv; grep LOAD inspect.out; fail "$nload traces loaded of $ntr"; }
grep -q 'hot.lua:11' inspect.out || fail "no per-guard line (hot.lua:11) in the line tables"
perf inject --jit -i perf.data -o perf.jit.data 2>inject.err || { cat inject.err; fail "perf inject"; }
# TRACE_1 named, in its jitted-*.so, with most of the samples in traces (a share: kernel
# rows from the script's getpid calls may rank first), and every one of its samples on a
# line of the loop it compiled (hot.lua:7-12), none unknown
perf report -i perf.jit.data --stdio --no-children --sort dso,sym >report.out 2>/dev/null
grep -Eq '^ +[0-9.]+% +jitted-[0-9]+-[0-9]+\.so +\[\.\] TRACE_1 hot\.lua:7 *$' report.out ||
    { head -30 report.out; fail "perf report does not name TRACE_1 in a jitted-*.so"; }
sh=$(share report.out '\] TRACE_1 ' '\] TRACE_[0-9]+ ')
[ "$sh" -ge 50 ] || { head -30 report.out; fail "TRACE_1 has only $sh% of the samples in traces"; }
perf report -i perf.jit.data --stdio --no-children --sort sym,srcline >srcline.out 2>/dev/null
only srcline.out ' hot\.lua:([7-9]|1[012]) *$' '\] TRACE_1 hot\.lua:7 ' ||
    { grep 'TRACE_1 ' srcline.out; fail "TRACE_1 samples off the loop's lines"; }
perf annotate -i perf.jit.data --stdio 'TRACE_1 hot.lua:7' >annotate.out 2>&1 || true
grep -q 'for i = 1, n do' annotate.out || { head -40 annotate.out; fail "perf annotate shows no source"; }
echo "ok: $ntr traces, TRACE_1 has $sh% of the samples in traces, all on hot.lua:7-12"
