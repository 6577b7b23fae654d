#!/usr/bin/env bash
# Valgrind does not watch file-backed code for self-modification (--smc-check default
# all-non-file): after elfmap swaps pages for files, new code written into a page's tail,
# patched code, moved code and re-used addresses run right under valgrind only because
# elfmap discards valgrind's translations at each of them. The elfmap unit test does all
# of that and checks every result; here it runs under memcheck, which must also find no
# error (built without the discard requests it crashes on a stale translation).
. "$(dirname "$0")/lib.sh"
require_tool valgrind valgrind
[ -x "$B/tests/test_elfmap" ] || fail "$B/tests/test_elfmap not built"
valgrind -q --tool=memcheck --error-exitcode=3 "$B/tests/test_elfmap" > "$T/out" 2>&1 ||
    { cat "$T/out"; fail "test_elfmap under memcheck"; }
tail -3 "$T/out"
grep -q ' 0 failed' "$T/out"
echo PASS
