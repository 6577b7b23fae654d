#!/usr/bin/env bash
# rows_perf.sh — one function stays one row in `perf report --sort sym`, however often it is
# patched or its page gets new code, new images and new generations of its image (issue 13,
# item 2). tests/programs/churn_rows: hot_0 is patched after each of 24 new functions written
# top-down around it, and functions removed and replaced make elfmap start new generations
# of the window's image; every function runs between the changes.
#   elfmap:  perf record; perf report --sort sym
#   jitdump: perf record -k 1; perf inject --jit; perf report --sort sym
# perf merges samples into one row by DSO base name, symbol offset and size
# (tools/perf/util/sort.c, sort__sym_cmp): a new file name or a new jitted-*.so per change
# splits a function into one row per change.
. "$(dirname "$0")/lib.sh"
require_tool perf linux-perf
private_perf_cache
P=$(program churn_rows)
cd "$T"

# Every function named in the report: exactly one row each.
one_row_each() { # report-file what
    local names n
    names=$(grep -Eo '\[\.\] (hot|reuse)_[0-9]+' "$1" | awk '{print $2}' | sort)
    [ -n "$names" ] || { cat "$1"; fail "$2: no JIT function in the report"; }
    grep -q '\[\.\] hot_0$' "$1" || { cat "$1"; fail "$2: hot_0 is not in the report"; }
    n=$(echo "$names" | uniq -d)
    [ -z "$n" ] || { grep -E "$(echo $n | tr ' ' '|')" "$1"; fail "$2: several rows for $n"; }
    echo "$2: $(echo "$names" | wc -l) functions, one row each"
}

JITHERALD=elfmap JITHERALD_DIR=$T/d perf record -q -o elfmap.data "$P" 24 1500 >out 2>err ||
    { cat err; fail "perf record (elfmap)"; }
ls -d d/jit-*-g2 >/dev/null 2>&1 || { find d; fail "no second generation of the image was made"; }
perf report -i elfmap.data --stdio --sort sym 2>/dev/null | grep -v '^#' >elfmap.rep
one_row_each elfmap.rep elfmap
# the same with the DSO column, as perf report shows by default
perf report -i elfmap.data --stdio --sort dso,sym 2>/dev/null | grep -v '^#' >elfmap2.rep
one_row_each elfmap2.rep "elfmap, --sort dso,sym"

JITHERALD=jitdump JITHERALD_DIR=$T/j perf record -q -k 1 -o jd.data "$P" 24 1500 >out 2>err ||
    { cat err; fail "perf record (jitdump)"; }
perf inject --jit -i jd.data -o jd.jit.data 2>inject.err || { cat inject.err; fail "perf inject"; }
perf report -i jd.jit.data --stdio --sort sym 2>/dev/null | grep -v '^#' >jitdump.rep
one_row_each jitdump.rep jitdump
echo PASS
