#!/usr/bin/env bash
# jitherald log F to-jitdump on a big log the library wrote stays cheap (issue 11, item 12:
# deciding whether a function's UNWINDING_INFO may be written looked at every function of
# the log, so 25k functions took 2.6 s and 300k 720 s). 60,000 demo-JIT functions, each
# with frame-pointer unwind rules: to-jitdump must finish within 10 CPU seconds (it needs
# ~0.3; the quadratic code needed ~16), write one LOAD, one DEBUG_INFO and one
# UNWINDING_INFO per function, and jitherald check must accept the file. The linear growth
# itself is measured by bench/scaling.sh, not here.
. "$(dirname "$0")/lib.sh"
n=60000
awk -v n="$n" 'BEGIN { for (i = 0; i < n; i++) printf "fn g%d(x) {\n    return x + %d\n}\n", i, i
    printf "fn main() {\n    return g%d(1)\n}\n", n - 1 }' > "$T/big.mini"
JITHERALD=auditlog JITHERALD_DIR=$T "$MINIJIT" "$T/big.mini" > /dev/null
log=$(ls "$T"/minijit-*.jhlog)
"$CLI" log "$log" info | tee "$T/info"
grep -q "$((n + 1)) functions" "$T/info" || fail "the log does not hold $((n + 1)) functions"

(ulimit -t 10; exec "$CLI" log "$log" to-jitdump -o "$T/jit.dump") \
    || fail "to-jitdump failed or ran out of its 10 CPU seconds (rc $?)"
"$CLI" check "$T/jit.dump" > "$T/check" 2>&1 || { cat "$T/check"; fail "check refuses the jitdump"; }
"$CLI" inspect "$T/jit.dump" > "$T/inspect" 2>&1 || { tail "$T/inspect"; fail "inspect failed"; }
for kind in LOAD DEBUG_INFO UNWINDING_INFO; do
    c=$(grep -Ec "^0x[0-9a-f]+ $kind " "$T/inspect" || true)
    echo "$kind records: $c"
    [ "$c" -ge $((n + 1)) ] || fail "$kind: $c records, expected one per function"
done
(ulimit -t 10; exec "$CLI" log "$log" to-perfmap -o "$T/perf.map") || fail "to-perfmap"
[ "$(wc -l < "$T/perf.map")" -eq $((n + 1)) ] || fail "perf map lines"
echo PASS
