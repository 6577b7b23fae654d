#!/usr/bin/env bash
# rows_callgrind.sh — one function stays one entry under callgrind however often its page
# gets new code or the function is patched (issue 13, item 2): tests/programs/churn_rows
# under JITHERALD=elfmap. callgrind keys a function by object (the image file's path), file
# and name; valgrind reads an image's symbols once per path, so elfmap makes it read the
# window's file again in place (elfmap_region.c, bounce) instead of handing it a new file
# per change, which made one entry per image.
. "$(dirname "$0")/lib.sh"
require_tool valgrind valgrind
P=$(program churn_rows)
cd "$T"
JITHERALD=elfmap JITHERALD_DIR=$T/d JITHERALD_DEBUG=1 valgrind -q --tool=callgrind --callgrind-out-file=cg.out \
    "$P" 12 20 >out 2>err || { cat err; fail "callgrind"; }
grep -q '13 functions, 10 live' out || fail "churn_rows: $(cat out)"
# Each JIT function defined once in the profile: one (object, file, name) = one id. A name
# is given where its id first appears, on a fn= or a cfn= (call) line.
grep -E '^c?fn=\([0-9]+\) (hot|reuse)_[0-9]+$' cg.out | sed 's/^c\?fn=//' | sort -u |
    awk '{print $2}' | sort >defs
[ -s defs ] || { cat err; grep -E '^(ob|fn)=' cg.out | head -30; fail "no JIT function in the profile"; }
grep -qx hot_0 defs || fail "hot_0 is not in the profile"
dups=$(uniq -d defs)
[ -z "$dups" ] || { grep -E '^(ob|fn)=' cg.out | head -60; fail "defined under several objects: $dups"; }
echo "callgrind: $(wc -l <defs) functions, one entry each"
callgrind_annotate cg.out >ann
grep -E '^ *[0-9,]+ .*rows\.x:hot_0 \[.*/jit-[0-9]+-[0-9]+\.elf\]' ann
[ "$(grep -cE 'rows\.x:hot_0 \[' ann)" = 1 ] || fail "hot_0 listed more than once"
echo PASS
