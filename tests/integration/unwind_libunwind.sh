#!/usr/bin/env bash
# nongnu libunwind (libunwind-dev) walks through JIT frames: a program linked with -lunwind
# (tests/programs/unwind_libunwind.cc) runs five minijit frames below main; from the host
# callback, unw_step + unw_get_proc_info must give every JIT frame its function's range
# (only the unwind channel's _U_dyn_register tables can tell libunwind that),
# unw_backtrace must reach main, and both still hold after the code is freed and compiled
# again at the same addresses, and while other threads compile and free code 20,000 times
# (libunwind reads its list without a lock: no crash, at most 1 walk in 1,000 missing a
# frame's proc info). The same program with the channel off must NOT see the JIT
# functions: the check can fail.
. "$(dirname "$0")/lib.sh"
PROG=$(program unwind_libunwind)
ldd "$PROG" | grep -q 'libunwind\.so\.8' || fail "not linked with nongnu libunwind"

echo "-- with JH_UNWIND"
"$PROG" || fail "libunwind does not walk through the JIT frames"
echo "-- 4 threads compiling and freeing code, 2 threads walking"
"$PROG" threads || fail "walks incomplete or crashed under churn"
echo "-- control, channel off (must not see the JIT functions)"
! "$PROG" control || fail "the control run passed: the test cannot tell"
echo PASS
