#!/usr/bin/env bash
# producers_llvm.sh — `jitherald check` and `inspect` on what LLVM 14's lli writes with
# its perf listener (--jit-kind=mcjit, JITDUMPDIR), next to what perf does with the same
# file (docs/interop.md): check exits 0 with the warnings due (vma 0, +0x40 lines),
# --strict exits 1, inspect lists as many LOADs as perf inject --jit wrote; and perf's ELF
# for fib has its first line row 0x40 bytes late, as the warning says.
. "$(dirname "$0")/lib.sh"
require_tool perf linux-perf
require_tool lli-14 llvm-14
private_perf_cache
cd "$T"

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
echo PASS
