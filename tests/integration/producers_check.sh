#!/usr/bin/env bash
# producers_check.sh — `jitherald check` and `inspect` on what other JITs really write,
# next to what perf does with the same files (docs/interop.md has the table of quirks):
#   node 20 / V8 (--perf-prof, --perf-basic-prof), Erlang/OTP 25 (erl +JPperf true),
#   LLVM 14 lli with its perf listener, rakudo / MoarVM (MVM_JIT_PERF_MAP=1), mono --jitmap.
# Every jitdump: check exits 0 with the warnings due, --strict exits 1, inspect lists as
# many LOADs as perf inject --jit wrote jitted-*.so files. Every perf map: check exits 0,
# inspect reads as many lines as the file has. And what the warnings claim: perf reads
# Erlang's 0x map, and puts LLVM's +0x40 lines 0x40 bytes late.
. "$(dirname "$0")/lib.sh"
require_tool perf linux-perf
for t in node:nodejs erl:erlang-base lli-14:llvm-14 rakudo:rakudo mono:mono-runtime; do
    require_tool "${t%%:*}" "${t#*:}"
done
private_perf_cache
cd "$T"

# check FILE WARNING...: exit 0, each named quirk warned about, --strict refuses it
check_quirks() {
    local f=$1; shift
    "$CLI" check "$f" >check.out 2>check.err || { cat check.out check.err; fail "check $f"; }
    cat check.err check.out
    local q; for q in "$@"; do grep -q "($q)\$" check.err || fail "$f: no $q warning"; done
    if [ $# -gt 0 ]; then
        ! "$CLI" check -q --strict "$f" >/dev/null 2>&1 || fail "$f: --strict accepts it"
    fi
    "$CLI" inspect "$f" >inspect.out 2>/dev/null || fail "inspect $f"
}
loads() { sed -n 's/.*ok: jitdump, [0-9]* records: \([0-9]*\) LOAD.*/\1/p' check.out; }
map_lines() { # MAP: inspect reads every line
    check_quirks "$@"
    local n; n=$(sed -n 's/.*ok: perf map, \([0-9]*\) lines/\1/p' check.out)
    [ "$n" = "$(wc -l <"$1")" ] || fail "$1: $n lines read of $(wc -l <"$1")"
}
# perf inject --jit writes one jitted-PID-N.so per LOAD it accepts, next to the dump
injected() { # DIR PID
    perf inject --jit -i perf.data -o perf.jit.data 2>inject.err || { cat inject.err; fail "perf inject"; }
    find "$1" -maxdepth 1 -name "jitted-$2-*.so" | wc -l
}

# --- node: V8
cat >fib.js <<'JS'
function fib(n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
let s = 0; for (let i = 0; i < 30; i++) s += fib(15);
console.log(s);
JS
mkdir node && cd node
perf record -q -k 1 -o perf.data node --perf-prof --interpreted-frames-native-stack \
    --perf-basic-prof ../fib.js >out 2>&1 || { cat out; fail "perf record node"; }
pid=$(ls jit-*.dump); pid=${pid#jit-}; pid=${pid%.dump}
at_exit "rm -f /tmp/perf-$pid.map"
mv "/tmp/perf-$pid.map" .
check_quirks "jit-$pid.dump" unwind-empty
# V8's line tables: +0x40 for its own functions, garbage for the script's (which ones it
# optimizes depends on timing)
grep -Eq '\((line-skew-0x40|line-garbage)\)$' check.err || fail "node: no line-table quirk"
n=$(loads); so=$(injected . "$pid")
echo "node: inspect $n LOADs, perf inject $so"
[ "$n" -gt 1000 ] && [ "$n" = "$so" ] || fail "node: $n LOADs, perf inject wrote $so"
[ "$(grep -c ' LOAD ' inspect.out)" = "$n" ] || fail "node: inspect lists fewer LOADs"
map_lines "perf-$pid.map"
cd ..

# --- Erlang: BEAM (its jitdump and its perf map go to /tmp, and so do perf's ELF files)
mkdir erl && cd erl
perf record -q -k 1 -o perf.data erl +JPperf true -noshell \
    -eval 'io:format("~p~n", [lists:sum(lists:seq(1, 300000))]), halt().' >out 2>&1 ||
    { cat out; fail "perf record erl"; }
grep -qx 45000150000 out || fail "erl"
pid=$(perf report -i perf.data --sort pid 2>/dev/null | sed -n 's/.* \([0-9][0-9]*\):beam.smp.*/\1/p' | head -1)
[ -n "$pid" ] && [ -f "/tmp/jit-$pid.dump" ] || pid=$(ls -t /tmp/jit-*.dump | head -1 | sed 's/.*jit-\([0-9]*\).dump/\1/')
at_exit "rm -f /tmp/perf-$pid.map /tmp/jit-$pid.dump; find /tmp -maxdepth 1 -name 'jitted-$pid-*.so' -delete"
check_quirks "/tmp/jit-$pid.dump" line-empty-file
n=$(loads); so=$(injected /tmp "$pid")
echo "erl: inspect $n LOADs, perf inject $so"
[ "$n" -gt 1000 ] && [ "$n" = "$so" ] || fail "erl: $n LOADs, perf inject wrote $so"
cp "/tmp/perf-$pid.map" .
map_lines "perf-$pid.map"
grep -q '(0x before the numbers' check.err || grep -q '0x before the numbers' check.err || fail "no 0x warning"
# perf itself reads the 0x map: samples in BEAM code get Erlang names
perf report -i perf.data --sort sym 2>/dev/null | grep -E '\[\.\] \$[a-z_]+:[a-z_]+/[0-9]' | head -3 |
    grep -q . || fail "perf named nothing from Erlang's 0x map"
cd ..

# --- LLVM 14: lli with the perf listener (JITDUMPDIR)
mkdir lli && cd lli
cat >t.ll <<'LL'
define i32 @fib(i32 %n) !dbg !6 {
  %c = icmp slt i32 %n, 2, !dbg !8
  br i1 %c, label %done, label %rec, !dbg !8
rec:
  %a = sub i32 %n, 1, !dbg !9
  %x = call i32 @fib(i32 %a), !dbg !9
  %b = sub i32 %n, 2, !dbg !10
  %y = call i32 @fib(i32 %b), !dbg !10
  %s = add i32 %x, %y, !dbg !10
  ret i32 %s, !dbg !10
done:
  ret i32 %n, !dbg !11
}
define i32 @main() !dbg !12 {
  %r = call i32 @fib(i32 20), !dbg !13
  %m = and i32 %r, 127, !dbg !13
  ret i32 %m, !dbg !13
}
!llvm.dbg.cu = !{!0}
!llvm.module.flags = !{!3, !4}
!0 = distinct !DICompileUnit(language: DW_LANG_C99, file: !1, producer: "t", isOptimized: false, runtimeVersion: 0, emissionKind: FullDebug)
!1 = !DIFile(filename: "fib.c", directory: "/src")
!3 = !{i32 7, !"Dwarf Version", i32 4}
!4 = !{i32 2, !"Debug Info Version", i32 3}
!5 = !DISubroutineType(types: !{})
!6 = distinct !DISubprogram(name: "fib", scope: !1, file: !1, line: 1, type: !5, unit: !0, spFlags: DISPFlagDefinition)
!8 = !DILocation(line: 2, column: 1, scope: !6)
!9 = !DILocation(line: 3, column: 1, scope: !6)
!10 = !DILocation(line: 4, column: 1, scope: !6)
!11 = !DILocation(line: 5, column: 1, scope: !6)
!12 = distinct !DISubprogram(name: "main", scope: !1, file: !1, line: 7, type: !5, unit: !0, spFlags: DISPFlagDefinition)
!13 = !DILocation(line: 8, column: 1, scope: !12)
LL
rc=0; JITDUMPDIR=$PWD perf record -q -k 1 -o perf.data lli-14 --jit-kind=mcjit t.ll >out 2>&1 || rc=$?
[ $rc = 109 ] || { cat out; fail "lli: exit $rc, want fib(20) & 127 = 109"; }
dump=$(find .debug -name 'jit-*.dump'); pid=${dump##*/jit-}; pid=${pid%.dump}
check_quirks "$dump" load-vma line-skew-0x40
n=$(loads); so=$(injected "$(dirname "$dump")" "$pid")
echo "lli: inspect $n LOADs, perf inject $so"
[ "$n" = 2 ] && [ "$so" = 2 ] || fail "lli: $n LOADs, perf inject wrote $so"
# the claim of line-skew-0x40: perf puts fib's first row (at code+0x40 in the dump) at
# .text + 0x40 of the ELF it writes, .text being at 0x80: past fib's 0x30 bytes of code
so=$(grep -l fib "$(dirname "$dump")"/jitted-*.so | head -1)
readelf -S "$so" | grep -q ' \.text .* 0000000000000080 ' || fail "lli: .text not at 0x80"
readelf --debug-dump=decodedline "$so" 2>/dev/null | grep -E 'fib\.c +[0-9]+ +0x' | head -1 >row
grep -q ' 0xc0 ' row || { cat row; readelf -wL "$so"; fail "lli: fib's first row not at 0xc0 in perf's ELF"; }
cd ..

# --- rakudo: MoarVM's perf map
mkdir moar && cd moar
MVM_JIT_PERF_MAP=1 rakudo -e 'sub f($n) { $n < 2 ?? $n !! f($n - 1) + f($n - 2) }; say f(18)' >out &
rpid=$!; wait $rpid || fail "rakudo"
grep -qx 2584 out || fail "rakudo result"
at_exit "rm -f /tmp/perf-$rpid.map"
mv "/tmp/perf-$rpid.map" .
map_lines "perf-$rpid.map"
"$CLI" check --strict "perf-$rpid.map" >/dev/null || fail "MoarVM's map fails --strict"
grep -q 'f(-e:1)' inspect.out || { head inspect.out; fail "inspect: no f(-e:1)"; }
cd ..

# --- mono: --jitmap (gacutil.exe ships with mono-runtime's GAC)
mkdir mono && cd mono
mono --jitmap /usr/lib/mono/4.5/gacutil.exe -l >out 2>&1 &
mpid=$!; wait $mpid || { cat out; fail "mono"; }
at_exit "rm -f /tmp/perf-$mpid.map"
mv "/tmp/perf-$mpid.map" .
map_lines "perf-$mpid.map"
"$CLI" check --strict "perf-$mpid.map" >/dev/null || fail "Mono's map fails --strict"
cd ..
echo PASS
