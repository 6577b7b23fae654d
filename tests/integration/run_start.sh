#!/usr/bin/env bash
# run_start.sh — `jitherald run` starts before every VM it runs, so the CLI must not load
# what only its offline commands use: libdw (and through it libelf, libz, liblzma,
# libbz2), zlib and capstone are opened when a command first needs them. Here: the
# libraries the CLI's own start loads (LD_DEBUG=libs, up to its "transferring control"),
# then the two commands that open libdw and zlib, still doing their work.
. "$(dirname "$0")/lib.sh"
cd "$T"
LD_DEBUG=libs "$CLI" run -c all -- true 2> libs.log
sed '/transferring control:/q' libs.log | sed -n 's/.*find library=\([^ ]*\).*/\1/p' |
    sort -u > cli.libs
echo "the CLI's start loads: $(tr '\n' ' ' < cli.libs)"
grep -q '^libc\.so' cli.libs || fail "LD_DEBUG=libs names no library: $(head -5 libs.log)"
heavy=$(grep -E '^lib(dw|elf|z|lzma|bz2|capstone)\.so' cli.libs || true)
[ -z "$heavy" ] || fail "jitherald run loads what it never uses: $(echo $heavy)"

# libdw, opened by `log show --vm`: a struct decoded with the VM's DWARF types.
VM=$(program auditlog_dwarf_vm)
JITHERALD=auditlog JITHERALD_DIR=$T "$VM"
log=$(ls "$T"/dwarfvm-*.jhlog)
addr=$("$CLI" log "$log" events | sed -n 's/.*trace_start trace=\(0x[0-9a-f]*\).*/\1/p')
"$CLI" log "$log" show "$addr" --vm "$VM" > show.out
grep -q '^  ir = 0x[0-9a-f]* -> struct ir_buf {$' show.out ||
    fail "log show --vm decoded no struct: $(head -5 show.out)"
# zlib, opened by `log report`: the page's data deflated.
"$CLI" log "$log" report -o report.html
grep -q '<script id=data type=application/octet-stream data-enc=deflate' report.html ||
    fail "the report's data is not deflated"
echo PASS
