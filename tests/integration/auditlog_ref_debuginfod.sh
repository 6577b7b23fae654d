#!/usr/bin/env bash
# auditlog_ref_debuginfod.sh — code recorded by reference (docs/auditlog-format.md, "Code
# recorded by reference") read back on "another machine": tests/programs/auditlog_ref_vm
# announces a function of its own executable, its log names the executable, its build-id
# and the offset; the executable is then published to a directory a debuginfod server here
# scans and deleted. `jitherald log show` first says it cannot read the code (no file, no
# server: control), then with DEBUGINFOD_URLS disassembles it with exactly the bytes
# objdump shows in the published file, and says where they came from.
# Loopback only, in a network namespace of its own (as buildid_debuginfod.sh).
. "$(dirname "$0")/lib.sh"
require_tool debuginfod debuginfod
require_tool debuginfod-find debuginfod
require_tool objdump binutils
own_netns "$@"
cd "$T"
cp "$(program auditlog_ref_vm)" vm
export LD_LIBRARY_PATH=$B
JITHERALD_DIR=$T/d ./vm > vm.out || fail "the program failed"
log=$(ls d/refvm-*.jhlog)
id=$(readelf -n vm | sed -n 's/.*Build ID: //p')
[ -n "$id" ] || skip "the program has no build-id"
mkdir pub
mv vm pub/                  # published; "another machine": no ./vm any more

export HOME=$T/home DEBUGINFOD_CACHE_PATH=$T/dcache
mkdir -p "$HOME"
unset DEBUGINFOD_URLS
"$CLI" log "$log" show builtin_sum > none.out 2> none.err
cat none.out none.err
grep -q "^  code: $T/vm at offset 0x[0-9a-f]*, build-id $id: not read ($T/vm: " none.out ||
    fail "control: show does not say the code could not be read"
grep -qE '^ +[0-9a-f]+: ' none.out && fail "control: bytes shown with the file gone"

port=$((20000 + RANDOM % 20000))
debuginfod -F -p "$port" -d "$T/db.sqlite" "$T/pub" > dbg.log 2>&1 &
srv=$!
kill_at_exit $srv
export DEBUGINFOD_URLS=http://127.0.0.1:$port
end=$((SECONDS + 120))      # the server scans in the background: ask until it serves it
until DEBUGINFOD_CACHE_PATH=$T/poll.$SECONDS debuginfod-find executable "$id" > /dev/null 2>&1; do
    kill -0 $srv 2>/dev/null || { cat dbg.log; fail "debuginfod exited"; }
    [ $SECONDS -lt $end ] || { cat dbg.log; fail "debuginfod never served $id"; }
    sleep 0.2
done
rm -rf "$T"/poll.*

"$CLI" log "$log" show builtin_sum > show.out 2> show.err
cat show.out show.err
grep -q "^  code: $T/vm at offset 0x[0-9a-f]*, build-id $id: read from $T/dcache/" show.out ||
    fail "show does not say the code was read from debuginfod's copy"
objdump -d --disassemble=builtin_sum pub/vm |
    sed -n 's/^ *[0-9a-f]*:\t\(\([0-9a-f][0-9a-f] \)*\).*/\1/p' | tr -d ' \n' | head -c 96 > want.hex
awk '/^ +[0-9a-f]+: / { for (i = 2; i <= NF && $i ~ /^[0-9a-f][0-9a-f]$/; i++) printf "%s", $i }' \
    show.out | head -c 96 > got.hex
[ "$(wc -c < want.hex)" = 96 ] && cmp -s want.hex got.hex ||
    { echo "objdump: $(cat want.hex)"; echo "show:    $(cat got.hex)"; fail "not the published file's bytes"; }
echo PASS
