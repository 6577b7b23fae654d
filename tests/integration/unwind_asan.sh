#!/usr/bin/env bash
# AddressSanitizer's report walks through JIT frames: a program built with
# -fsanitize=address (tests/programs/unwind_asan.c) reads freed memory in a host callback
# below five minijit frames. Its slow unwinder (_Unwind_Backtrace, what ASan uses for fatal
# reports unless told otherwise) must show the JIT frames and then `in main`. With the
# channel off the stack of the bad access must stop at the first JIT frame: the check can
# fail.
. "$(dirname "$0")/lib.sh"
PROG=$(program unwind_asan)

# The first stack of the report is the bad access: keep it up to its blank line.
access_stack() { sed -n '/READ of size/,/^$/p' "$1"; }
export ASAN_OPTIONS=fast_unwind_on_fatal=0:detect_leaks=0:symbolize=1
! "$PROG" 2>"$T/on.txt" || fail "no ASan report"
access_stack "$T/on.txt"
access_stack "$T/on.txt" | grep -q 'heap-use-after-free\|READ of size' || { cat "$T/on.txt"; fail "no report"; }
njit=$(access_stack "$T/on.txt" | grep -c '<unknown module>' || true)
access_stack "$T/on.txt" | grep -q ' in main ' || fail "the report's stack does not reach main"
[ "$njit" -ge 5 ] || fail "$njit JIT frames in the report, expected 5"

echo "-- control, channel off"
"$PROG" control 2>"$T/off.txt" || true
access_stack "$T/off.txt"
! access_stack "$T/off.txt" | grep -q ' in main ' ||
    fail "the control run's stack reaches main: the test cannot tell"
echo PASS
