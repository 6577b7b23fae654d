#!/usr/bin/env bash
# The demo JIT with the audit log on: the timeline names every function of the program
# with its source line, the disassembly shows the code with its source lines, the VM's own
# struct mj_function is decoded from DWARF with the values the program has, and an
# independent msgpack decoder (msgpack-c) reads every frame of the file. Then a program of
# 1,000 functions: every one of its 1,001 compile events and struct snapshots is in the
# log, each function's once (a few events would not notice a writer losing one in ten).
. "$(dirname "$0")/lib.sh"
prog=$MINI/loops.mini
JITHERALD=auditlog JITHERALD_DIR=$T "$MINIJIT" --log-structs "$prog" > "$T/out"
log=$(ls "$T"/minijit-*.jhlog)
J="$CLI log $log"

$J info | tee "$T/info"
grep -q "closed cleanly, nothing dropped" "$T/info"

# Every `fn NAME` of the source appears as a code_add at its line, and is removed at exit.
$J code > "$T/code"; cat "$T/code"
n=0
while IFS=: read -r line rest; do
    name=$(echo "$rest" | sed -n 's/^fn \([a-z_0-9]*\).*/\1/p')
    grep -Eq "add +[0-9]+  $name .*loops.mini:$line\$" "$T/code" || fail "no add of $name at line $line"
    grep -Eq "remove +[0-9]+  $name " "$T/code" || fail "no remove of $name"
    n=$((n + 1))
done < <(grep -n '^fn ' "$prog")
[ "$n" -eq 5 ]
grep -q "5 functions added, 5 removed, 0 live" "$T/code"
[ "$($J code gcd | grep -Ec '^ +[0-9]+ +[0-9.]+  (add|remove) ')" -eq 2 ]   # one function's history

# One compile event per function, its address attributes resolved.
$J events > "$T/events"; cat "$T/events"
[ "$(grep -c ' compile name="' "$T/events")" -eq 5 ]
grep -q 'compile name="gcd" code=0x[0-9a-f]*\[gcd+0x0\].*function=0x[0-9a-f]*\[struct mj_function, [0-9]* B logged\]' "$T/events"

# Disassembly of gcd with its source lines (gcd is defined on line 38).
$J show gcd > "$T/gcd"; head -20 "$T/gcd"
grep -Eq "(^|/)loops.mini:38 +fn gcd\(a, b\) \{$" "$T/gcd"     # with the source text
grep -q "push *rbp" "$T/gcd"
grep -Eq "\bret\b" "$T/gcd"

# struct mj_function of gcd, decoded with the DWARF of the minijit binary.
addr=$(sed -n 's/.*compile name="gcd".*function=\(0x[0-9a-f]*\).*/\1/p' "$T/events")
size=$(sed -n 's/.*compile name="gcd".* size=\([0-9]*\) .*/\1/p' "$T/events")
$J show "$addr" --vm "$MINIJIT" > "$T/struct"; cat "$T/struct"
grep -q "^struct mj_function {" "$T/struct"
grep -q "^  nparams = 2$" "$T/struct"            # fn gcd(a, b)
grep -q "^  line = 38$" "$T/struct"
grep -q "^  code_size = $size$" "$T/struct"
grep -q "^  code = 0x[0-9a-f]* -> gcd+0x0$" "$T/struct"
grep -q "^  announced = 1$" "$T/struct"
grep -q "^  index = 3$" "$T/struct"               # the fourth fn of the file

# The perf map regenerated from the log names the five functions.
$J to-perfmap > "$T/map"; cat "$T/map"
[ "$(grep -Ec '^[0-9a-f]+ [0-9a-f]+ (prime_sum|collatz|classify|gcd|main)$' "$T/map")" -eq 5 ]

# An independent decoder: msgpack-c walks the file as a stream of msgpack objects
# (tests/programs/auditlog_msgpack_walk.c).
WALK=$(program auditlog_msgpack_walk)
"$WALK" "$log" | tee "$T/walk.out"
nrec=$($J list | wc -l)
grep -q "^$nrec frames, $nrec records$" "$T/walk.out"

# 1,000 functions and main: 1,001 of everything, counted exactly, by name.
awk 'BEGIN { for (i = 0; i < 1000; i++) printf "fn f%d(x) {\n    return x + %d\n}\n", i, i
             printf "fn main() {\n    return f999(1)\n}\n" }' > "$T/big.mini"
mkdir "$T/big"
JITHERALD=auditlog JITHERALD_DIR=$T/big "$MINIJIT" --log-structs --print-result "$T/big.mini" > "$T/big.out"
[ "$(cat "$T/big.out")" = "main returned 1000" ] || fail "big.mini printed $(cat "$T/big.out")"
log=$(ls "$T"/big/minijit-*.jhlog)
J="$CLI log $log"
$J info | tee "$T/big.info"
grep -q "^4006 records: 1001 functions (0 live at the end), 1001 memory snapshots, 1001 events$" "$T/big.info" ||
    fail "not every function, snapshot and event of 1,001 is in the log"
grep -q "closed cleanly, nothing dropped" "$T/big.info"
$J code | grep -q "1001 functions added, 1001 removed, 0 live" || fail "not 1,001 adds and removes"
$J events | sed -n 's/.* compile name="\([a-z0-9]*\)" code=0x[0-9a-f]*\[\1+0x0\] .*\[struct mj_function, [0-9]* B logged\]$/\1/p' |
    sort > "$T/big.names"
{ seq 0 999 | sed 's/^/f/'; echo main; } | sort | diff - "$T/big.names" >/dev/null ||
    fail "compile events: $(wc -l < "$T/big.names") resolved names, not f0..f999 and main once each"
"$WALK" "$log" > "$T/big.walk"
grep -q "^4006 frames, 4006 records$" "$T/big.walk" || fail "msgpack-c: $(cat "$T/big.walk")"
echo PASS
