#!/usr/bin/env bash
# `jitherald callgrind IN OUT`, the offline fallback: a callgrind profile of the demo JIT
# with its code left anonymous names it only by address; the rewrite, from the jitdump (or
# the perf map) written during the run, names it with file and lines, while every other
# function keeps exactly its inclusive cost and the totals do not move.
. "$(dirname "$0")/lib.sh"
require_tool valgrind valgrind
at_exit 'rm -f "/tmp/perf-${pid:-0}.map"'
cd "$T"
cp "$MINI/fib.mini" .
# --dump-instr=yes: instruction addresses give per-line costs; the default gives one line
# per block. Both are rewritten.
for instr in yes no; do
    rm -rf d; rm -f cg.out named.out "/tmp/perf-${pid:-0}.map"
    JITHERALD=jitdump,perfmap JITHERALD_DIR=$T/d valgrind -q --tool=callgrind --dump-instr=$instr \
        --callgrind-out-file=cg.out "$MINIJIT" fib.mini 14 > out
    [ "$(cat out)" = 377 ]
    callgrind_annotate --inclusive=yes cg.out > before
    pid=$(sed -n 's/^pid: //p' cg.out)
    # JIT code named by address: "???:0x...", address inside a range of the perf map.
    jit_addr_names() {
        local starts=() ends=() st sz nm line a i
        while read -r st sz nm; do starts+=($((16#$st))); ends+=($((16#$st + 16#$sz))); done < "/tmp/perf-$pid.map"
        grep -oE "\?\?\?:0x[0-9a-f]+('[0-9]+)? \[\?\?\?\]" "$1" | sort -u | while read -r line; do
            a=${line#???:0x}; a=$((16#${a%%[\' ]*}))
            for i in "${!starts[@]}"; do
                if [ $a -ge ${starts[$i]} ] && [ $a -lt ${ends[$i]} ]; then echo "$line"; break; fi
            done
        done; }
    jit_addr_names before > b.jit
    cat b.jit
    [ -s b.jit ] || fail "nothing to rewrite (JIT code named already?)"
    JITHERALD_DIR=$T/d "$CLI" callgrind cg.out named.out
    callgrind_annotate --inclusive=yes named.out > after
    grep -E 'fib\.mini:fib.* \[jit-[0-9]+\.dump\]' after
    grep -E 'fib\.mini:main \[jit-[0-9]+\.dump\]' after
    [ -z "$(jit_addr_names after)" ] || fail "JIT code left unnamed"
    # Line-level costs in fib's body (by instruction; else each block at its first line).
    if [ $instr = yes ]; then grep -E '^ *[1-9][0-9,]* .*if n < 2 \{ return n \}' after
    else grep -E '^ *[1-9][0-9,]* .*fn fib\(n\) \{' after; fi
    # Every function that is not JIT code: same inclusive cost before and after.
    costs() { sed -n '/file:function/,/^-- Auto/p' "$1" | grep -vF -f b.jit | grep -v 'fib\.mini:' |
              grep -E '^ *[0-9,]+ \(' | sed -E 's/ +\([ 0-9.]+%\)//' | sort; }
    costs before > b.costs; costs after > a.costs
    [ "$(wc -l < b.costs)" -gt 20 ]
    diff b.costs a.costs || fail "inclusive costs of other functions changed"
    grep 'PROGRAM TOTALS' before > b.tot; grep 'PROGRAM TOTALS' after > a.tot; diff b.tot a.tot
    # The JIT entry's inclusive cost is what its C caller spent calling it.
    callgrind_annotate --tree=calling named.out | grep -A3 -E 'fib\.mini:main \[' > tree || true
    # Self costs of the address-named blocks add up to the named functions' self costs.
    self() { callgrind_annotate --threshold=100 "$1" | sed -n '/file:function/,/^-- Auto/p' |
             grep "$2" "$3" | sed -E 's/^ *([0-9,]+).*/\1/; s/,//g' | awk '{s+=$1} END {print s+0}'; }
    b=$(self cg.out -F -fb.jit); a=$(self named.out -E 'fib\.mini:(fib|main)')
    echo "self cost of JIT code: $b by address, $a by name"
    [ "$a" = "$b" ] && [ "$a" -gt 0 ] || fail "JIT self costs differ"
done

# From the perf map alone: names, no files.
"$CLI" callgrind --map "/tmp/perf-$pid.map" cg.out map.out
rm -f "/tmp/perf-$pid.map"
callgrind_annotate map.out | grep -E '\?\?\?:fib.* \[perf-[0-9]+\.map\]'
# A file that is not a profile is refused.
! "$CLI" callgrind --map /dev/null fib.mini x.out || fail "accepted junk"
echo PASS
