#!/usr/bin/env bash
# C++ exceptions through JIT-compiled C++ frames (tests/programs/llvm/guards.cc, clang++-14
# -g -O1 to IR, LLJIT or MCJIT), thrown by a host callback, with the adapter's unwind
# channel on:
#   cxx_entry(4): a std::runtime_error crosses deep() and guarded(), whose Guard
#                 destructors run (2 of them), and is caught in the host;
#   catch_here(3): an int crosses deep() and guarded() (2 destructors) and is caught by
#                 catch_here's own catch, in JIT code (result 1003).
# Destructors and the JIT's catch need the personality routine and LSDA of each frame.
#   1. LLVM registers its .eh_frame as usual: jitherald must not shadow it (JITLink,
#      RuntimeDyld, and MCJIT, which tells listeners before it registers).
#   2. LLVM does not (--no-llvm-eh): the FDEs jitherald registers alone carry the
#      personality and LSDA read from the object.
# Control: neither registers: the exception terminates the program.
. "$(dirname "$0")/lib.sh"
JIT=$(program llvm_jit)
IR=$B/tests/programs/llvm
run() { # expected-lines... -- llvm_jit options... -- ENTRY ARG
    local want=() opts=() out
    while [ "$1" != -- ]; do want+=("$1"); shift; done
    shift
    while [ "$1" != -- ]; do opts+=("$1"); shift; done
    out=$(JITHERALD=unwind JITHERALD_DEBUG=1 timeout 60 "$JIT" --catch "${opts[@]}" "$IR/guards.ll" "$@" 2>&1 || true)
    for w in "${want[@]}"; do
        grep -qxF -- "$w" <<<"$out" || { echo "$out"; fail "llvm_jit ${opts[*]} $*: no line '$w'"; }
    done
    # every function of the object got its unwind rules, personality and LSDA included
    grep -q 'jitherald-llvm: object .*: 5 functions, 1 files, 5 with unwind rules' <<<"$out" ||
        { echo "$out"; fail "llvm_jit ${opts[*]} $*: not every function announced with its unwind rules"; }
    # JITLink and RuntimeDyld register their .eh_frame before telling us: ours stays out
    # of the way; MCJIT tells us first (then both describe the same code alike)
    local left=no want_left
    grep -q 'already has unwind information in this process' <<<"$out" && left=yes
    case "${opts[*]}" in
    *--no-llvm-eh*|*--mcjit*) want_left=no ;;
    *) want_left=yes ;;
    esac
    [ $left = $want_left ] ||
        { echo "$out"; fail "llvm_jit ${opts[*]} $*: LLVM's own registration left to it: $left, expected $want_left"; }
}
for linker in --jitlink --rtdyld --mcjit; do
    for eh in "" --no-llvm-eh; do
        run 'caught: thrown by the host' 'guard 4 ran' 'guard 104 ran' 'guards 2' -- $linker $eh -- cxx_entry 4
        run 'result 1003' 'guard 3 ran' 'guard 103 ran' 'guards 2' -- $linker $eh -- catch_here 3
        echo "PASS $linker ${eh:-(LLVM registers too)}: destructors run, caught in the host and in JIT code"
    done
done
out=$("$JIT" --jitlink --no-llvm-eh --no-jitherald --catch "$IR/guards.ll" -- cxx_entry 4 2>&1 || true)
grep -q 'terminate called' <<<"$out" || fail "control: no terminate without any unwind info: $out"
echo "PASS control: without unwind info the exception terminates the program"
