#!/usr/bin/env bash
# The Windows unwind benchmark (bench/win64/unwind.cc) under Wine: throw, longjmp and
# RtlCaptureStackBackTrace through 3 JIT frames with 3, 10,000 and 100,000 functions
# registered, jitherald beside one RtlAddFunctionTable per function. Needs mingw-w64
# (make builds build-win64/bench/bench_unwind.exe) and Wine; says so and exits 0 without.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WB=${JH_WIN_BUILD:-$ROOT/build-win64}
EXE=$WB/bench/bench_unwind.exe
if ! command -v wine >/dev/null 2>&1 || [ ! -f "$EXE" ]; then
    echo "skipped: needs Wine and $EXE (make bench-win64, with mingw-w64 installed)"
    exit 0
fi
. "$ROOT/scripts/wine-env.sh"
log=$(mktemp)
out=$(mktemp)
trap 'rm -f "$log" "$out"; wineserver -k 2>/dev/null' EXIT
jh_wine_env "$WB/wine" "$log" || { cat "$log"; exit 1; }
echo "Wine $(wine --version 2>/dev/null) — what Wine's unwinder costs, not Windows'"
(cd "$(dirname "$EXE")" && wine "$EXE" "$@") > "$out" 2>&1
rc=$?
tr -d '\r' < "$out"
exit $rc
