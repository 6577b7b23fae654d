#!/usr/bin/env bash
# auditlog_report_scale.sh — the HTML report of a log of 40,001 functions, whose main
# (compiled first, so the page embeds its disassembly) calls each of them: 40,000 source
# lines and some 120,000 instructions in one function. Made within 10 CPU seconds (it
# needs about one; finding each instruction's source line by scanning the whole line
# table needed far more), and in headless Chromium the table holds every function, draws
# only the rows in view, opens main with its disassembly (cut around what matters: the
# page says what it left out) and #q=NAME finds one function among them all. The growth
# itself is measured by bench/report.sh, not here.
. "$(dirname "$0")/lib.sh"
n=40000
awk -v n="$n" 'BEGIN { printf "fn main() {\n    var s = 0\n"
    for (i = 0; i < n; i++) printf "    s = s + g%d(1)\n", i
    printf "    return s\n}\n"
    for (i = 0; i < n; i++) printf "fn g%d(x) {\n    return x + %d\n}\n", i, i }' > "$T/big.mini"
JITHERALD=auditlog JITHERALD_DIR=$T "$MINIJIT" "$T/big.mini" > /dev/null
log=$(ls "$T"/minijit-*.jhlog)
(ulimit -t 10; exec "$CLI" log "$log" report -o "$T/r.html" --source-dir "$T") ||
    fail "report failed or ran out of its 10 CPU seconds (rc $?)"
ls -l "$T/r.html"
chrome_page "file://$T/r.html" "$T/dom.html"
chrome_page "file://$T/r.html#q=g12345" "$T/dom_q.html"
python3 - "$T/dom.html" "$T/dom_q.html" "$n" <<'PY'
import os, re, sys
sys.path.insert(0, os.environ["JH_ROOT"] + "/tests/integration")
import report_page as rp
dom, n = open(sys.argv[1]).read(), int(sys.argv[3])
assert 'id="error"' not in dom, "the page could not read its data"
m = re.search(r'id="count"[^>]*>(\d+) of (\d+) shown', dom)
assert m and int(m.group(1)) == int(m.group(2)) == n + 1, "count: %s" % (m and m.group(0))
drawn = rp.rows(dom)
assert 10 <= len(drawn) <= 100, "%d rows drawn of %d: not only those in view" % (len(drawn), n + 1)
assert drawn[0][0] == "main", drawn[:1]
det = re.search(r'<div id="detail">(.*?)<h2>', dom, re.S).group(1)
assert '<div class="full">main</div>' in det and re.search(r'big\.mini:3\b', det), "main's disassembly"
assert "lines left out of the page" in det, "main's disassembly embedded whole"
q = [r[0] for r in rp.rows(open(sys.argv[2]).read())]
assert q == ["g12345"], "#q=g12345 shows %s" % q[:5]
print("PASS: %d functions, %d rows drawn, search finds g12345, main's disassembly in part" % (n + 1, len(drawn)))
PY
