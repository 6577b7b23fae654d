#!/usr/bin/env bash
# LLVM's libunwind (the unwinder of clang/libc++ programs; Debian libunwind-14) walks through
# JIT frames: a C program linked with it (tests/programs/unwind_llvm.c) calls its
# _Unwind_Backtrace from below five minijit frames; the walk must pass d, c, b, a, main
# (minijit's) in order and reach our main. The channel must have chosen LLVM mode
# (__unw_add_dynamic_fde, one FDE per call). The same program with the channel off must
# stop at the first JIT frame: the check can fail.
. "$(dirname "$0")/lib.sh"
PROG=$(program unwind_llvm)

echo "-- with JH_UNWIND"
"$PROG" || fail "LLVM libunwind does not walk through the JIT frames"
echo "-- control, channel off (must stop at the first JIT frame)"
! "$PROG" control || fail "the control run passed: the test cannot tell"
echo PASS
