#!/usr/bin/env bash
# Runs every benchmark: the programs built from bench/*.c and the scripts bench/*.sh.
# Each prints its own table (ours beside the peer, same run). Never fails on a number.
set -u
BUILD=${BUILD:-build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export JH_ROOT=$ROOT JH_BUILD=$ROOT/$BUILD
# bench/percall rewrites the table of docs/cost.md with what it measured
export JH_BENCH_PERCALL_DOC=$ROOT/docs/cost.md
cd "$ROOT"
for b in "$BUILD"/bench/*; do
    [ -f "$b" ] && [ -x "$b" ] || continue      # bench/llvm/: programs bench/llvm.sh runs
    echo "== $(basename "$b")"; "$b" || echo "(benchmark $(basename "$b") exited $?)"; echo
done
for s in bench/*.sh; do
    [ "$(basename "$s")" = run.sh ] && continue
    [ -f "$s" ] || continue
    echo "== $(basename "$s" .sh)"; bash "$s" || echo "(benchmark $(basename "$s") exited $?)"; echo
done
exit 0
