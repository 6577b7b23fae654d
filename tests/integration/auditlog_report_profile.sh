#!/usr/bin/env bash
# auditlog_report_profile.sh — `jitherald log F report --profile perf.data|callgrind.out`,
# opened in headless Chromium: the page attributes each sample to the function that was at
# its address at the time, where perf with the perf map cannot (the demo JIT reuses the
# addresses of spin_a for spin_b: profile/known.sh).
# Asserted in the DOM after the page's scripts ran, against independent counts:
#  1. the hottest row is spin_b, with exactly perf's own samples after spin_a's removal
#     (perf script split at the log's time), and spin_a's row exactly those before;
#  2. the page's "the perf map would name N of them differently" is what `perf report`
#     with the perf map misnamed, and spin_a's row notes the name perf shows;
#  3. spin_b (selected first) has its disassembly annotated: its instructions' sample
#     counts add up to its self count, some source line of phase2.mini carries samples;
#  4. report.html#q=spin_a shows spin_a and nothing else;
#  5. the flame graph holds main, and spin_a and spin_b as its children, each frame as
#     wide as its share of the samples;
# and on a screenshot: the flame graph's frames of spin_b and spin_a are drawn in the JIT
# colour at the widths their sample counts give (within 3 px; the text is not OCR'd);
#  6. callgrind.out: the reused address's cost is one row "spin_a | spin_b", marked shared,
#     with 90% or more of the cost, first.
. "$(dirname "$0")/lib.sh"
require_tool perf linux-perf
require_tool valgrind valgrind
private_perf_cache
cd "$T"
. "$R/tests/integration/profile/known.sh"
known_record 40000000
read -r ta tb < <(known_truth)
known_perf_counts
[ "$ta" -ge 50 ] || fail "only $ta samples of spin_a: too few to say anything"
want=$([ "$pa" = 0 ] && echo "$ta" || echo "$tb")
shown=$([ "$pa" = 0 ] && echo spin_b || echo spin_a)
[ "$pa" = 0 ] || [ "$pb" = 0 ] || fail "perf named both spin_a ($pa) and spin_b ($pb): no name was wrong"
echo "truth: spin_a $ta, spin_b $tb; perf report with the perf map: spin_a $pa, spin_b $pb"

"$CLI" log "$log" report --profile p.data -o report.html --source-dir "$R/tests" 2>rep.err ||
    { cat rep.err; fail "report --profile exited $?"; }
chrome_page "file://$T/report.html" dom.html shot.png
chrome_page "file://$T/report.html#q=spin_a" dom_q.html
python3 - "$ta" "$tb" "$want" "$shown" <<'PY' || fail "the page (see above)"
import re, sys
sys.path.insert(0, __import__("os").environ["JH_ROOT"] + "/tests/integration")
import report_page as rp
ta, tb, want, shown = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
dom = open("dom.html").read()
assert 'id="error"' not in dom, re.search(r'id="error"[^>]*>([^<]*)', dom).group(1)
rows = rp.rows(dom)
print("rows:", rows[:4])
assert rows and rows[0][0] == "spin_b" and rows[0][3] == "JIT", "hottest row: %s" % (rows[:1],)
assert int(rows[0][1]) == tb, "spin_b self %s, perf's samples say %d" % (rows[0][1], tb)
a = [r for r in rows if r[0] == "spin_a"]
assert a and int(a[0][1]) == ta, "spin_a row %s, perf's samples say %d" % (a, ta)
# 2
m = re.search(r'id="mislabel"[^>]*>the perf map would name (\d+) of them', dom)
assert m and int(m.group(1)) == want, "mislabel %s, perf report misnamed %d" % (m and m.group(1), want)
wrong_row = "spin_a" if shown == "spin_b" else "spin_b"
note = [r[4] for r in rows if r[0] == wrong_row][0]
assert note and note.strip() == "perf map: %s \u00d7%d" % (shown, want), "row note %r" % note
# 3
det = re.search(r'<div id="detail">(.*?)<h2>', dom, re.S).group(1)
assert '<div class="full">spin_b</div>' in det, "spin_b not selected first"
counts = [int(c) for c in re.findall(r'<span class="ln hot"[^>]*><span class="c">(\d+)</span>', det)]
assert sum(counts) == tb, "instruction samples add up to %d, spin_b self %d" % (sum(counts), tb)
src = re.findall(r'<span class="ln src"><span class="c">(\d+)</span>[^<]*phase2\.mini:(\d+)', det)
assert src, "no source line of phase2.mini with samples"
print("spin_b: %d instructions with samples; source lines:" % len(counts), src)
# 4
q = [r[0] for r in rp.rows(open("dom_q.html").read())]
assert q == ["spin_a"], "#q=spin_a shows %s" % q
# 5
fr = rp.frames(dom)
root = [f for f in fr if f[2] == "root"][0]
main = [f for f in fr if f[0] == "main" and "k0" in f[2]]
kids = {f[0]: f for f in fr if f[0] in ("spin_a", "spin_b") and main and f[5] == main[0][5] + 17}
assert main and set(kids) == {"spin_a", "spin_b"}, "flame: main %s, its children %s" % (main, kids)
for name, f in kids.items():
    exp = f[1] / root[1] * root[4]
    assert abs(f[4] - exp) < 1, "%s frame %.1f px wide for %d of %d samples" % (name, f[4], f[1], root[1])
assert kids["spin_b"][1] >= tb and kids["spin_a"][1] >= ta
# the screenshot: JIT frames are rgb(240,140,60) with a 1 px white border
img = rp.png("shot.png")
runs = rp.runs(img, (240, 140, 60))
for name, f in kids.items():
    w = round(f[4]) - 2
    ok = [y for y, rs in runs.items() for x0, n in rs if abs(n - w) <= 3]
    assert ok, "no %s frame of %d px in the screenshot (runs: %s)" % (name, w, sorted({n for rs in runs.values() for _, n in rs})[-8:])
    print("screenshot: %s frame drawn %d px wide, at y" % (name, w), ok[0])
print("page OK")
PY

# 6. callgrind: no time; the same page from callgrind.out.
mkdir cg && cd cg
JITHERALD=auditlog JITHERALD_DIR=$T/cg valgrind -q --tool=callgrind --callgrind-out-file=cg.out \
    "$MINIJIT" --recompile-from "$P/phase2.mini" "$P/phase1.mini" 1000000 >/dev/null 2>vg.err ||
    { cat vg.err; fail "valgrind --tool=callgrind minijit"; }
"$CLI" log "$(ls minijit-*.jhlog)" report --profile cg.out -o cg.html 2>cgrep.err ||
    { cat cgrep.err; fail "report --profile cg.out"; }
total=$(awk '/^(summary|totals):/ { print $2; exit }' cg.out)
chrome_page "file://$T/cg/cg.html" cgdom.html
python3 - "$total" <<'PY' || fail "the callgrind page (see above)"
import os, sys
sys.path.insert(0, os.environ["JH_ROOT"] + "/tests/integration")
import report_page as rp
rows = rp.rows(open("cgdom.html").read())
print("rows:", rows[:3])
assert rows and rows[0][0] == "spin_a | spin_b" and rows[0][3] == "shared", rows[:1]
assert int(rows[0][1]) >= 0.9 * int(sys.argv[1]), "%s of %s Ir" % (rows[0][1], sys.argv[1])
PY
echo "PASS: the report names $ta samples spin_a and $tb spin_b by time (perf with the perf map misnames $want), in Chromium"
