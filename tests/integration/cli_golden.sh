#!/usr/bin/env bash
# cli_golden.sh — the CLI's exact output on a fixed corpus, as zstd's cli-tests do: every
# case of tests/golden/cases runs `jitherald ARGS` in tests/golden/corpus/ and must give
# the stdout, stderr and exit status stored in tests/golden/expected/NAME.out (stdout,
# byte for byte) and NAME.err (first line "exit N", then stderr). Any change in what a
# command prints shows up here, so a refactor proves it changed nothing, and a change in
# behaviour is reviewed as a diff of these files.
#
# After an intended change in output, regenerate and review:
#     UPDATE=1 tests/integration/cli_golden.sh && git diff tests/golden/expected
# The corpus itself is made by tests/golden/mkcorpus.sh (rarely: it changes every address).
# Cases marked +capstone print disassembly; when the CLI was built without capstone (its hex
# dump differs) they are not run, and the test then ends in a skip (77), not a pass.
. "$(dirname "$0")/lib.sh"
J=$CLI
G=$R/tests/golden
have_capstone=0
# built with capstone: the CLI names its library, which it opens at the first disassembly
lib=$(grep -ao 'libcapstone\.so\.[0-9]*' "$J" 2>/dev/null | head -1)
[ -n "$lib" ] && { ldconfig -p || /sbin/ldconfig -p; } 2>/dev/null | grep -q "$lib " && have_capstone=1
fail=0 n=0 skipped=()
while read -r name rest; do
    case $name in ''|'#'*) continue ;; esac
    if [ "${rest%% *}" = +capstone ]; then
        rest=${rest#+capstone}
        if [ $have_capstone = 0 ]; then skipped+=("$name"); continue; fi
    fi
    eval "args=($rest)"
    rc=0
    (cd "$G/corpus" && exec env -u JITHERALD -u JITHERALD_DIR "$J" "${args[@]}") \
        >"$T/out" 2>"$T/stderr" </dev/null || rc=$?
    { echo "exit $rc"; cat "$T/stderr"; } > "$T/err"
    n=$((n + 1))
    if [ "${UPDATE:-0}" = 1 ]; then
        cp "$T/out" "$G/expected/$name.out"; cp "$T/err" "$G/expected/$name.err"
        continue
    fi
    for k in out err; do
        if ! cmp -s "$T/$k" "$G/expected/$name.$k"; then
            echo "FAIL: $name (jitherald $rest): $k differs from tests/golden/expected/$name.$k"
            diff -a "$G/expected/$name.$k" "$T/$k" | head -20
            fail=1
        fi
    done
done < "$G/cases"
[ "${UPDATE:-0}" = 1 ] && { echo "updated $n cases in tests/golden/expected/"; exit 0; }
[ $fail = 0 ] || exit 1
echo "$n golden cases match"
[ ${#skipped[@]} = 0 ] ||
    skip "the CLI was built without capstone: ${#skipped[@]} case(s) NOT checked: ${skipped[*]}"
