#!/usr/bin/env bash
# Valgrind does not watch file-backed code for self-modification (--smc-check default
# all-non-file): after elfmap swaps pages for files, new code written into a page's tail,
# patched code, moved code and re-used addresses run right under valgrind only because
# elfmap discards valgrind's translations at each of them. The elfmap unit test does all
# of that and checks every result; here it runs under memcheck, which must also find no
# error (built without the discard requests it crashes on a stale translation).
set -eu
B=$JH_BUILD
command -v valgrind >/dev/null || { echo "SKIP valgrind is not installed"; exit 77; }
[ -x "$B/tests/test_elfmap" ] || { echo "FAIL: $B/tests/test_elfmap not built"; exit 1; }
valgrind -q --tool=memcheck --error-exitcode=3 "$B/tests/test_elfmap" > "${TMPDIR:-/tmp}/elfmap_smc.$$" 2>&1 ||
    { cat "${TMPDIR:-/tmp}/elfmap_smc.$$"; rm -f "${TMPDIR:-/tmp}/elfmap_smc.$$"; echo "FAIL"; exit 1; }
tail -3 "${TMPDIR:-/tmp}/elfmap_smc.$$"
grep -q ' 0 failed' "${TMPDIR:-/tmp}/elfmap_smc.$$"
rm -f "${TMPDIR:-/tmp}/elfmap_smc.$$"
echo PASS
