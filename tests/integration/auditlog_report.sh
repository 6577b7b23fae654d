#!/usr/bin/env bash
# The HTML report of a demo-JIT run without a profile, opened in headless Chromium: the
# DOM its script renders lists every function of the program with its source line, opens
# the first one loaded (c) to its compile history (code_add, the JIT's own "compile"
# event naming it, code_remove), its disassembly with source lines and the struct
# mj_function that event names, decoded with the VM's DWARF; #fn=NAME opens another, and
# the timeline has its lanes.
. "$(dirname "$0")/lib.sh"
JITHERALD=auditlog JITHERALD_DIR=$T "$MINIJIT" --log-structs "$MINI/calls.mini" > /dev/null
log=$(ls "$T"/minijit-*.jhlog)
"$CLI" log "$log" report -o "$T/report.html" --vm "$MINIJIT" --source-dir "$MINI"
chrome_page "file://$T/report.html" "$T/dom.html"
chrome_page "file://$T/report.html#fn=main" "$T/dom_main.html"
python3 - "$T/dom.html" "$T/dom_main.html" <<'PY'
import os, re, sys
sys.path.insert(0, os.environ["JH_ROOT"] + "/tests/integration")
import report_page as rp
dom = open(sys.argv[1]).read()
assert 'id="error"' not in dom, re.search(r'id="error"[^>]*>([^<]*)', dom).group(1)
rows = re.findall(r'<div class="row[^"]*" data-name="([^"]*)"[^>]*><span class="n">(\d+)</span>'
                  r'<span class="nm"[^>]*>[^<]*</span><span>0x[0-9a-f]+</span><span class="n">(\d+)</span>'
                  r'.*?<span class="nm" title="([^"]*)"', dom, re.S)
print("function rows:", rows)
assert sorted(r[0] for r in rows) == ["a", "b", "c", "main"], rows
for r in rows:
    assert int(r[2]) > 0 and re.search(r'calls\.mini:(5|10|15|20)$', r[3]), r
det = re.search(r'<div id="detail">(.*?)<h2>', dom, re.S).group(1)
assert '<div class="full">c</div>' in det, "the first function is not open"
hist = re.findall(r'<tr><td class="n">[\d.]+</td><td>(\w+)</td>', det)
assert hist == ["code_add", "event", "code_remove"], hist
assert 'title="compile {name=&quot;c&quot;, code=0x' in det, "no compile event naming c"
assert re.search(r'calls\.mini:7', det), "no source line in the disassembly"
assert re.search(r'push\s+rbp', det), "no disassembly"
assert re.search(r'struct mj_function \{\s+name = 0x[0-9a-f]+[^\n]*\n\s+nparams = 1', det), "struct not decoded"
assert 'closed cleanly' in dom
assert '<svg id="timeline"' in dom and 'code: load (4)' in dom and 'event: compile (4)' in dom, "timeline lanes"
main = re.search(r'<div id="detail">(.*?)<h2>', open(sys.argv[2]).read(), re.S).group(1)
assert '<div class="full">main</div>' in main and re.search(r'calls\.mini:2[0-9]', main), "#fn=main"
print("PASS")
PY
