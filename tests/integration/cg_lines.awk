# cg_lines.awk TRUTH MAP PROFILE — in a callgrind profile with instruction positions
# (--dump-instr=yes: "positions: instr line"), every position in JIT code, cost lines and call
# targets, must be on the line the truth gives for its offset. TRUTH: "NAME OFFSET LINE" rows,
# offsets in hex (tests/programs/mj_lines.c: the demo JIT's own tables); MAP: a perf map saying
# where each function is. Prints the count checked; exits 1 on a wrong line or fewer than 20.
# (mawk has no strtonum: hex() does it; addresses stay below 2^53, exact in a double.)
function hex(s,   i, v, c) {
    sub(/^0x/, "", s); v = 0
    for (i = 1; i <= length(s); i++) { c = index("0123456789abcdef", tolower(substr(s, i, 1))); v = v * 16 + c - 1 }
    return v
}
function num(s) { return s ~ /^0x/ ? hex(s) : s + 0 }
function sub_pos(s, prev) {
    if (s == "*") return prev
    if (s ~ /^\+/) return prev + num(substr(s, 2))
    if (s ~ /^-/) return prev - num(substr(s, 2))
    return num(s)
}
# the truth's line for address a, or -1 when a is in no function of the map
function want(a,   f, off, k, best) {
    for (f = 1; f <= nf; f++) if (a >= st[f] && a < en[f]) break
    if (f > nf) return -1
    off = a - st[f]; best = 0
    for (k = 1; k <= nrow[fname[f]]; k++) if (roff[fname[f], k] <= off) best = rline[fname[f], k]
    return best
}
function check(a, l, what) {
    w = want(a)
    if (w < 0) return
    n++
    if (w != l) { bad++; if (bad <= 10) printf "FAIL: %s 0x%x: line %d, the JIT's table says %d\n", what, a, l, w }
}
FILENAME == ARGV[1] { nrow[$1]++; roff[$1, nrow[$1]] = hex($2); rline[$1, nrow[$1]] = $3; next }
FILENAME == ARGV[2] { nf++; st[nf] = hex($1); en[nf] = st[nf] + hex($2); fname[nf] = $3; next }
/^positions:/ { if ($2 != "instr" || $3 != "line") { print "FAIL: positions: " $2 " " $3; bad++ } next }
/^calls=/ { split($0, c, /[= ]+/); check(num(c[3]), c[4] + 0, "call target"); next }
/^[0-9+*-]/ { ia = sub_pos($1, ia); il = sub_pos($2, il); check(ia, il, "instruction"); next }
END { printf "%d positions in JIT code checked against the JIT's line table, %d wrong\n", n, bad
      exit (bad > 0 || n < 20) }
