#!/usr/bin/env bash
# `JITHERALD=jitdump perf record -k 1 luajit -l jitherald` + `perf inject --jit`: perf
# report names the hot trace with the source line of its samples (the per-guard line
# table: hot.lua:7-11, the loop's lines), every trace got a LOAD, and perf annotate shows
# the trace's machine code beside the Lua source.
. "$(dirname "$0")/lib.sh"
require_tool perf linux-perf
luajit_adapter
private_perf_cache
cp "$LUAJIT_SCRIPTS/hot.lua" "$T/"
cd "$T"
export JITHERALD=jitdump JITHERALD_DIR=$T/jd
perf record -q -k 1 -e cpu-clock -F 5000 -o perf.data -- luajit -jv -l jitherald hot.lua 20 \
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
perf report -i perf.jit.data --stdio --no-children --sort sym,srcline >report.out 2>/dev/null
top=$(grep -E '^ +[0-9.]+%' report.out | grep TRACE_ | head -1)
echo "$top" | grep -Eq '\[\.\] TRACE_1 hot\.lua:7 +hot\.lua:(7|8|11|12)$' ||
    { head -30 report.out; fail "hottest trace line: $top"; }
perf annotate -i perf.jit.data --stdio 'TRACE_1 hot.lua:7' >annotate.out 2>&1 || true
grep -q 'for i = 1, n do' annotate.out || { head -40 annotate.out; fail "perf annotate shows no source"; }
echo "ok: $ntr traces, hottest: $top"
