#!/usr/bin/env bash
# The LLVM adapter with JITHERALD=gdb and no debugger registers each module as its object
# with load addresses (what LLVM's GDB listener registers), describing nothing (issue 30).
# A channel switched on later (jh_channels_set, as `jitherald attach` does) must still hear
# those modules: bench/llvm/modules compiles 40 one-function modules, switches perfmap on
# beside gdb after 30, and the perf map must name all 40 functions, each once, at the
# address LLVM gave it, for RuntimeDyld (listener) and JITLink (ORC plugin).
. "$(dirname "$0")/lib.sh"
MOD=$B/bench/llvm/modules
[ -x "$MOD" ] || { [ -z "$(command -v llvm-config-14)" ] && skip "llvm-config-14 not installed (llvm-14-dev)"; }
[ -x "$MOD" ] || fail "$MOD not built (make tests)"
N=40 AT=30
for mode in jitherald jitherald-link; do
    JITHERALD=gdb JITHERALD_DEBUG=1 JH_BENCH_SWITCH_AT=$AT "$MOD" $mode $N > "$T/out" 2>&1 &
    pid=$!
    wait $pid || { cat "$T/out"; fail "$mode: modules exited $?"; }
    map=/tmp/perf-$pid.map
    [ -f "$map" ] || { cat "$T/out"; fail "$mode: no perf map"; }
    cp "$map" "$T/map.$mode"
    rm -f "$map"
    grep -q "^jitherald-llvm: channels changed: $AT modules registered as debug objects now announced" "$T/out" ||
        { cat "$T/out"; fail "$mode: the $AT modules kept as objects were not announced"; }
    for ((i = 0; i < N; i++)); do
        [ "$(grep -c "^[0-9a-f]* [0-9a-f]* f$i *\$" "$T/map.$mode")" = 1 ] ||
            { cat "$T/map.$mode"; fail "$mode: f$i is not in the perf map once"; }
    done
    echo "ok $mode: $N functions in the perf map, $AT of them kept as objects until perfmap came on"
done
echo "PASS modules kept as objects reach a channel switched on later"
