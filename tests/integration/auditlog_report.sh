#!/usr/bin/env bash
# The HTML report of a demo-JIT run, opened in headless Chromium: the DOM it renders holds
# the function table with every function of the program, the timeline, the disassembly
# with source lines and the decoded struct mj_function.
. "$(dirname "$0")/lib.sh"
CHROME=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
[ -n "$CHROME" ] || require_tool chromium chromium
JITHERALD=auditlog JITHERALD_DIR=$T "$MINIJIT" --log-structs "$MINI/calls.mini" > /dev/null
log=$(ls "$T"/minijit-*.jhlog)
"$CLI" log "$log" report -o "$T/report.html" --vm "$MINIJIT"
timeout 120 "$CHROME" --headless --no-sandbox --disable-gpu --disable-background-networking \
    --disable-component-update --disable-sync --no-first-run --user-data-dir="$T/profile" \
    --dump-dom "file://$T/report.html" > "$T/dom.html" 2> "$T/chrome.err" || { cat "$T/chrome.err"; exit 1; }
# One row per function in the rendered table: <tr><td class="n">ID</td><td><a ...>NAME</a>
python3 - "$T/dom.html" <<'PY'
import re, sys
dom = open(sys.argv[1]).read()
m = re.search(r'<table id="functions">.*?</table>', dom, re.S)
assert m, "no function table in the DOM"
rows = re.findall(r'<tr><td class="n">(\d+)</td><td><a href="#fn-\d+">([^<]*)</a></td>'
                 r'<td>0x[0-9a-f]+</td><td class="n">(\d+)</td>.*?<td><span title="[^"]*">([^<]*)</span></td><td>',
                 m.group(0), re.S)
names = sorted(r[1] for r in rows)
print("function rows:", rows)
assert names == ["a", "b", "c", "main"], names
for r in rows:
    assert int(r[2]) > 0 and re.search(r'calls\.mini:(5|10|15|20)$', r[3]), r
assert '<svg id="timeline"' in dom, "no timeline"
assert re.search(r'calls\.mini:7</span>', dom), "no source line in the disassembly"
assert re.search(r'push\s+rbp', dom), "no disassembly"
assert re.search(r'struct mj_function \{\s+name = 0x[0-9a-f]+[^\n]*\n\s+nparams = 1', dom), "struct not decoded"
assert 'closed cleanly' in dom
print("PASS")
PY
