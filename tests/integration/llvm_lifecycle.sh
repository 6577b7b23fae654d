#!/usr/bin/env bash
# What the LLVM adapter announces, and that it goes away with the object: through JITLink
# (the ORC plugin: ResourceTracker::remove), RuntimeDyld and MCJIT (the listener:
# notifyFreeingObject), jitherald knows jit_entry while the code is there and not after,
# and the audit log holds one add and one remove for each of the four functions, with its
# C source file. Through JITLink and RuntimeDyld a module whose link fails first (broken.c:
# an unresolved symbol, after it compiled) is never announced, and the modules after it are.
# Control: without the adapter jitherald never knows jit_entry.
. "$(dirname "$0")/lib.sh"
JIT=$(program llvm_jit)
IR=$B/tests/programs/llvm
for linker in --jitlink --rtdyld --mcjit; do
    broken=()       # MCJIT ends the process on an unresolved symbol (report_fatal_error)
    [ "$linker" = --mcjit ] || broken=(--broken "$IR/broken.ll")
    JITHERALD=perfmap,auditlog JITHERALD_DIR=$T/al$linker sh -c "$PID_EXEC" "$T/pid$linker" \
        "$JIT" $linker --remove "${broken[@]}" "$IR/entry.ll" "$IR/chain.ll" "$IR/work.ll" -- jit_entry 10 \
        > "$T/out$linker" 2>&1
    at_exit "rm -f /tmp/perf-$(cat "$T/pid$linker").map"
    cat "$T/out$linker"
    grep -qx 'lookup before: jit_entry' "$T/out$linker" || fail "$linker: jit_entry not announced"
    grep -qx 'lookup after: no such code registered' "$T/out$linker" || fail "$linker: jit_entry left announced"
    "$CLI" log "$T"/al$linker/llvm-*.jhlog code > "$T/log$linker"
    cat "$T/log$linker"
    for f in jit_entry:entry.c leaf:chain.c middle:chain.c work:work.c; do
        name=${f%%:*} file=${f#*:}
        [ "$(grep -Ec " add +[0-9]+ +$name +0x[0-9a-f]+ +[0-9]+ +/.*/$file:[0-9]+$" "$T/log$linker")" = 1 ] ||
            fail "$linker: not one add of $name from $file"
        [ "$(grep -Ec " remove +[0-9]+ +$name " "$T/log$linker")" = 1 ] || fail "$linker: not one remove of $name"
    done
    grep -q '4 functions added, 4 removed, 0 live' "$T/log$linker" || fail "$linker: the tally"
    if [ ${#broken[@]} -gt 0 ]; then
        grep -qx 'broken: link failed' "$T/out$linker" || fail "$linker: broken.ll did not fail to link"
        ! grep -q 'broken_entry' "$T/log$linker" || fail "$linker: a module whose link failed was announced"
    fi
    echo "PASS $linker: announced with file:line, removed with the object${broken:+; a module whose link failed never announced}"
done
JITHERALD=perfmap sh -c "$PID_EXEC" "$T/pid-control" "$JIT" --jitlink --no-jitherald \
    "$IR/entry.ll" "$IR/chain.ll" "$IR/work.ll" -- jit_entry 10 > "$T/control" 2>&1
at_exit "rm -f /tmp/perf-$(cat "$T/pid-control").map"
grep -qx 'lookup before: no such code registered' "$T/control" || fail "control: $(cat "$T/control")"
echo "PASS control: without the adapter jitherald never knows jit_entry"
