#!/usr/bin/env bash
# Two jitherald ORC plugins on one ObjectLinkingLayer (two contexts, say one per tool or
# per engine): each announces every module. LLVM 14 calls every plugin's
# notifyMaterializing, then every plugin's modifyPassConfig, so the plugin's shortcut (the
# module this thread announced last, orc_plugin.cc) never matches and both find their
# state by looking it up: jh_lookup on each context knows jit_entry while the code is there
# and not after ResourceTracker::remove, and each context's audit log holds one add and one
# remove of each of the four functions, with its C source file.
. "$(dirname "$0")/lib.sh"
JIT=$(program llvm_jit)
IR=$B/tests/programs/llvm
JITHERALD=auditlog JITHERALD_DIR=$T "$JIT" --jitlink --two-plugins --remove \
    "$IR/entry.ll" "$IR/chain.ll" "$IR/work.ll" -- jit_entry 10 > "$T/out" 2>&1 ||
    fail "llvm_jit: $(cat "$T/out")"
cat "$T/out"
grep -qx 'result 1456' "$T/out" || fail "the JIT code did not run to its result"
for l in lookup lookup2; do
    grep -qx "$l before: jit_entry" "$T/out" || fail "$l: jit_entry not announced"
    grep -qx "$l after: no such code registered" "$T/out" || fail "$l: jit_entry left announced"
done
for engine in llvm llvm2; do
    "$CLI" log "$T"/$engine-[0-9]*.jhlog code > "$T/log-$engine"
    cat "$T/log-$engine"
    for f in jit_entry:entry.c leaf:chain.c middle:chain.c work:work.c; do
        name=${f%%:*} file=${f#*:}
        [ "$(grep -Ec " add +[0-9]+ +$name +0x[0-9a-f]+ +[0-9]+ +/.*/$file:[0-9]+$" "$T/log-$engine")" = 1 ] ||
            fail "$engine: not one add of $name from $file"
        [ "$(grep -Ec " remove +[0-9]+ +$name " "$T/log-$engine")" = 1 ] || fail "$engine: not one remove of $name"
    done
    grep -q '4 functions added, 4 removed, 0 live' "$T/log-$engine" || fail "$engine: the tally"
done
echo PASS
