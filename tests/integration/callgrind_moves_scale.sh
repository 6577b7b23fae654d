#!/usr/bin/env bash
# jitherald callgrind --jitdump on a jitdump of a compacting JIT: 100,000 functions LOADed,
# then each MOVEd once. The symbol table used to look up the LOAD of each MOVE by scanning
# every function loaded before it (80,000: 6.9 s); now by address. The rewrite must finish
# within 10 CPU seconds (it needs ~0.2) and name code at the moved addresses, the first
# function and the last. The linear growth itself is measured by bench/scaling.sh.
. "$(dirname "$0")/lib.sh"
n=100000 A=0x7f0000000000 B=0x7f0100000000
python3 - "$T/jit.dump" "$n" "$A" "$B" <<'PY'
import struct, sys
path, n, a, b = sys.argv[1], int(sys.argv[2]), int(sys.argv[3], 16), int(sys.argv[4], 16)
pid, code = 4242, b"\x55\x48\x89\xe5\x5d\xc3" + b"\x90" * 26
out = [struct.pack("<IIIIIIQQ", 0x4A695444, 1, 40, 62, 0, pid, 1, 0)]
ts = 2
for k in range(n):        # JIT_CODE_LOAD: pid tid vma code_addr size index name code
    name = b"f%d\0" % k
    body = struct.pack("<IIQQQQ", pid, pid, a + 64 * k, a + 64 * k, len(code), k + 1) + name + code
    out.append(struct.pack("<IIQ", 0, 16 + len(body), ts) + body); ts += 1
for k in range(n):        # JIT_CODE_MOVE: pid tid vma old new size index
    body = struct.pack("<IIQQQQQ", pid, pid, b + 64 * k, a + 64 * k, b + 64 * k, len(code), k + 1)
    out.append(struct.pack("<IIQ", 1, 16 + len(body), ts) + body); ts += 1
out.append(struct.pack("<IIQ", 3, 16, ts))
open(path, "wb").write(b"".join(out))
PY
first=$(printf '0x%x' $((B))) last=$(printf '0x%x' $((B + 64 * (n - 1) + 4)))
cat > "$T/in.cgout" <<EOF
# callgrind format
version: 1
creator: callgrind_moves_scale
pid: 4242
cmd: jit

positions: instr
events: Ir

ob=(1) /bin/jit
fl=(1) jit.c
fn=(1) main
0x401000 5
cob=(2) ???
cfi=(2) ???
cfn=(2) $first
calls=1 $first
0x401004 7
cfn=(3) $last
calls=1 $last
0x401008 9

ob=(2)
fl=(2)
fn=(2)
$first 10

fn=(3)
$last 20
EOF
(ulimit -t 10; exec "$CLI" callgrind --jitdump "$T/jit.dump" "$T/in.cgout" "$T/out.cgout") \
    || fail "jitherald callgrind failed or ran out of its 10 CPU seconds (rc $?)"
grep -E '^c?fn=' "$T/out.cgout"
grep -Eq "^cfn=\(2\) f0$" "$T/out.cgout" || fail "code at f0's new address is not named f0"
grep -Eq "^cfn=\(3\) f$((n - 1))$" "$T/out.cgout" || fail "code inside f$((n - 1))'s new address is not named"
echo PASS
