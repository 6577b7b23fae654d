#!/usr/bin/env bash
# perfmap_short_names.sh — perf names JIT functions whose names are one or two characters
# long. perf skips a perf-map line whose name is shorter than 3 bytes
# (tools/perf/util/symbol.c, dso__load_perf_map: `if (len + 2 >= line_len) continue;`),
# so the perf map pads such names with spaces (fmt/perfmap.h). Found by fuzz_roundtrip:
# the library wrote lines for empty names that `jitherald check` refused.
. "$(dirname "$0")/lib.sh"
require_tool perf linux-perf
cat > "$T/short.mini" <<'MINI'
fn a(n) {
    var s = 0
    while n > 0 { s = s + n % 7  n = n - 1 }
    return s
}
fn ab(n) {
    var s = 0
    while n > 0 { s = s + n % 5  n = n - 1 }
    return s
}
fn main() {
    return a(60000000) + ab(60000000)
}
MINI
JITHERALD=perfmap perf record -F 2000 -o "$T/p.data" "$MINIJIT" --print-result "$T/short.mini" \
    > "$T/out" 2> "$T/err" || { cat "$T/err" "$T/out"; fail "perf record"; }
pid=$(perf script -i "$T/p.data" -F pid 2>/dev/null | awk 'NF { print $1; exit }')
[ -n "$pid" ] || fail "no samples"
at_exit "rm -f /tmp/perf-$pid.map"
grep -Eq '^[0-9a-f]+ [0-9a-f]+ a  $' "/tmp/perf-$pid.map" || fail "a not padded in the map"
perf report --stdio -i "$T/p.data" --sort sym 2> /dev/null | grep -v '^#' > "$T/report"
cat "$T/report" | head -5
grep -Eq '\[\.\] a *$' "$T/report" || fail "perf report does not name a"
grep -Eq '\[\.\] ab *$' "$T/report" || fail "perf report does not name ab"
"$CLI" check "/tmp/perf-$pid.map" 2>&1 | grep -q 'ok: perf map' || fail "jitherald check refuses the map"
echo "PASS: perf names a and ab through the perf map"
