#!/usr/bin/env bash
# One trace, one row: under heavy patching (every side trace rewrites its parent's exit
# branches: hundreds of jh_code_patched on a few hundred traces) `perf report --sort sym`
# lists each trace once, through jitdump + perf inject and through elfmap (issue 13 item
# 2).
. "$(dirname "$0")/lib.sh"
require_tool perf linux-perf
luajit_adapter
private_perf_cache
cd "$T"
S=$R/bench/luajit/stress.lua
dups() { # report: names listed on more than one row
    grep -Eo '\[\.\] TRACE_[0-9]+ [^ ]+' "$1" | sort | uniq -d
}
# jitdump: no flush, so that a name stays one trace
JITHERALD=jitdump JITHERALD_DIR=$T/jd perf record -q -k 1 -e cpu-clock -F 20000 -o jd.data -- \
    luajit -l jitherald "$S" 100 4 0 - 20000 >/dev/null 2>err || fail "$(cat err)"
perf inject --jit -i jd.data -o jd.jit.data 2>err || fail "perf inject: $(cat err)"
perf report -i jd.jit.data --stdio --no-children --sort sym 2>/dev/null >jd.report
n=$(grep -c '\[\.\] TRACE_' jd.report || true)
[ "$n" -ge 20 ] || { head -30 jd.report; fail "jitdump: only $n trace rows"; }
d=$(dups jd.report)
[ -z "$d" ] || fail "jitdump: traces on several rows: $(echo $d | head -c 400)"

JITHERALD=elfmap JITHERALD_DIR=$T/em perf record -q -e cpu-clock -F 20000 -o em.data -- \
    luajit -l jitherald "$S" 100 4 0 - 20000 >/dev/null 2>err || fail "$(cat err)"
perf report -i em.data --stdio --no-children --sort sym 2>/dev/null >em.report
n2=$(grep -c '\[\.\] TRACE_' em.report || true)
[ "$n2" -ge 20 ] || { head -30 em.report; fail "elfmap: only $n2 trace rows"; }
d=$(dups em.report)
[ -z "$d" ] || fail "elfmap: traces on several rows: $(echo $d | head -c 400)"
echo "ok: $n (jitdump) and $n2 (elfmap) trace rows, each trace once"
