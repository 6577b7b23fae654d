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
    # By instruction, exactly: every position in fib and main (cost lines, call targets) on
    # the line the demo JIT's own table gives for its offset (mj_lines: the compiler's rows,
    # no jitherald code), so a line table shifted by an encoder or a reader shows.
    if [ $instr = yes ]; then
        "$(program mj_lines)" fib.mini > truth
        awk -f "$R/tests/integration/cg_lines.awk" truth "/tmp/perf-$pid.map" named.out ||
            fail "the rewrite puts JIT instructions on the wrong lines"
    fi
    # Every function that is not JIT code: same inclusive cost before and after.
    costs() { sed -n '/file:function/,/^-- Auto/p' "$1" | grep -vF -f b.jit | grep -v 'fib\.mini:' |
              grep -E '^ *[0-9,]+ \(' | sed -E 's/ +\([ 0-9.]+%\)//' | sort; }
    costs before > b.costs; costs after > a.costs
    [ "$(wc -l < b.costs)" -gt 20 ]
    diff b.costs a.costs || fail "inclusive costs of other functions changed"
    grep 'PROGRAM TOTALS' before > b.tot; grep 'PROGRAM TOTALS' after > a.tot; diff b.tot a.tot
    # The JIT entry's inclusive cost is what its C caller spent calling it: in the caller
    # tree, the line right above main's is its one caller, mj_call, called once, with
    # main's inclusive cost.
    callgrind_annotate --tree=caller --inclusive=yes named.out > tree
    read -r ccost caller mcost <<<"$(awk '/ \* +.*fib\.mini:main \[jit-[0-9]+\.dump\]/ {
        split(prev, p, " "); print p[1], (prev ~ / < .*minijit\.c:mj_call \(1x\) /) ? "mj_call" : "other", $1; exit }
        { prev = $0 }' tree)"
    [ "${caller:-}" = mj_call ] && [ "$ccost" = "$mcost" ] &&
        grep -Eq "^ *$mcost \([ 0-9.]+%\) +.*fib\.mini:main \[" after ||
        { grep -B3 -A1 'fib\.mini:main \[' tree; fail "main's call from mj_call: ${ccost:-none}, caller ${caller:-none}, inclusive ${mcost:-none}"; }
    # Self costs of the address-named blocks add up to the named functions' self costs.
    self() { callgrind_annotate --threshold=100 "$1" | sed -n '/file:function/,/^-- Auto/p' |
             grep "$2" "$3" | sed -E 's/^ *([0-9,]+).*/\1/; s/,//g' | awk '{s+=$1} END {print s+0}'; }
    b=$(self cg.out -F -fb.jit); a=$(self named.out -E 'fib\.mini:(fib|main)')
    echo "self cost of JIT code: $b by address, $a by name"
    [ "$a" = "$b" ] && [ "$a" -gt 0 ] || fail "JIT self costs differ"
done

# The invariants (tests/programs/cg_invariants.c) under every option that changes what
# callgrind writes: contexts, recursion levels, instructions, jumps, cache and branch
# events, uncompressed names and positions, threads in files of their own, several parts
# (files callgrind.out.PID.N, or one file with --combine-dumps). Several inputs go to a
# directory, each under its own name.
n=0
for opts in "--separate-callers=2 --dump-instr=yes" "--dump-instr=yes --collect-jumps=yes" \
            "--separate-recs=3 --separate-callers=3" "--cache-sim=yes --branch-sim=yes" \
            "--compress-strings=no --compress-pos=no --dump-instr=yes" "--separate-threads=yes" \
            "--dump-every-bb=20000" "--dump-every-bb=20000 --combine-dumps=yes"; do
    n=$((n + 1)); mkdir "o$n" "o$n/named"
    # shellcheck disable=SC2086
    JITHERALD=jitdump JITHERALD_DIR=$T/d$n valgrind -q --tool=callgrind $opts \
        --callgrind-out-file="o$n/cg.out" "$MINIJIT" fib.mini 14 >out 2>vg.err
    [ "$(cat out)" = 377 ] || { cat vg.err; fail "minijit under callgrind $opts"; }
    dump=$(ls "d$n"/jit-*.dump)
    echo "== $opts: $(cd "o$n" && echo cg.out*)"
    "$CLI" callgrind --jitdump "$dump" "o$n"/cg.out* "o$n/named" 2>log || { cat log; fail "rewrite $opts"; }
    for f in "o$n"/cg.out*; do
        [ -s "$f" ] || continue         # --separate-threads=yes leaves the base file empty
        "$(program cg_invariants)" --jitdump "$dump" "$f" "o$n/named/${f##*/}" || fail "invariants: $opts: $f"
    done
done
ls o6/cg.out-01 o7/cg.out.1 >/dev/null || fail "no thread file or no parts"
grep -q "^c\?fn=.*fib'2'main'" o1/named/cg.out || fail "--separate-callers=2: no fib'2'main'... context"
grep -q "^fn=fib" o5/named/cg.out || fail "uncompressed names: fib not named"
grep -q '^events: .*Bc' o4/named/cg.out || fail "branch events"

# From the perf map alone: names, no files.
"$CLI" callgrind --map "/tmp/perf-$pid.map" cg.out map.out
cp "/tmp/perf-$pid.map" map.src
rm -f "/tmp/perf-$pid.map"
callgrind_annotate map.out | grep -E '\?\?\?:fib.* \[perf-[0-9]+\.map\]'
# A file that is not a profile is refused; so is a symbol file given that cannot be read
# (exit 1) or is not there (exit 2), before anything is written.
! "$CLI" callgrind --map /dev/null fib.mini x.out || fail "accepted junk"
rc=0; "$CLI" callgrind --map fib.mini cg.out x.out 2>err || rc=$?
[ $rc = 1 ] && grep -q 'jitherald callgrind: fib.mini: not a perf map: it is a text file' err && [ ! -e x.out ] || { cat err; fail "junk map: exit $rc"; }
rc=0; "$CLI" callgrind --jitdump nothing.dump cg.out x.out 2>err || rc=$?
[ $rc = 2 ] && [ ! -e x.out ] || { cat err; fail "missing dump: exit $rc"; }
# A perf map with 0x before its numbers (as Erlang writes them) names the code as well.
sed 's/^/0x/' map.src >hex.map
"$CLI" callgrind --map hex.map cg.out hex.out
callgrind_annotate hex.out | grep -E '\?\?\?:fib.* \[hex\.map\]' || fail "0x map names nothing"
echo PASS
