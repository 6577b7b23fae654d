#!/usr/bin/env bash
# lldb through the same JIT interface on the demo JIT: `b c` before `run` resolves when
# the code is registered and hits; `bt` names every JIT frame with calls.mini:LINE:COL down
# to the C main; `image lookup -a` and `disassemble -n` work; after jh_code_remove the JIT
# images are gone and the recompiled code is found again; `lldb -p` after registration
# sees everything. (lldb -b quits at the first failing command, so each check is a
# command that must succeed, or the last one.)
. "$(dirname "$0")/lib.sh"
require_tool lldb lldb
MJ=("$MINIJIT")
CALLS=$MINI/calls.mini
lldb_b() { timeout 120 lldb --no-lldbinit -b "$@" 2>&1 | grep -v -e '^Traceback' -e '^  File "<string>"' -e '^ModuleNotFoundError' -e '^NameError' || true; }

# 1. pending breakpoint, backtrace, lookup, disassembly
JITHERALD=gdb lldb_b -o 'b c' -o run -o bt -o 'image lookup -a $pc' -o 'disassemble -n b' \
    -o 'b mj__builtin_callback' -o continue -o bt -- "${MJ[@]}" "$CALLS" > "$T/bt"
cat "$T/bt"
grep -q '1 location added to breakpoint 1' "$T/bt"
grep -Eq 'stop reason = breakpoint 1\.1' "$T/bt"
grep -Eq 'frame #0: 0x[0-9a-f]+ JIT\(0x[0-9a-f]+\)`c at calls\.mini:6:5' "$T/bt"
grep -Eq 'frame #1: 0x[0-9a-f]+ JIT\(0x[0-9a-f]+\)`b at calls\.mini:12:12' "$T/bt"
grep -Eq 'frame #2: 0x[0-9a-f]+ JIT\(0x[0-9a-f]+\)`a at calls\.mini:17:12' "$T/bt"
grep -Eq 'frame #3: 0x[0-9a-f]+ JIT\(0x[0-9a-f]+\)`main at calls\.mini:22:9' "$T/bt"
grep -Eq 'frame #4: 0x[0-9a-f]+ minijit`mj_call' "$T/bt"
grep -Eq 'frame #[0-9]+: 0x[0-9a-f]+ minijit`main\(argc=' "$T/bt"
grep -Eq 'Summary: JIT\(0x[0-9a-f]+\)`c \+ [0-9]+ at calls\.mini:6:5' "$T/bt"
grep -Eq '^JIT\(0x[0-9a-f]+\)`b:$' "$T/bt"
grep -Eq '<\+0>: +pushq +%rbp' "$T/bt"
# unwinding out of C code called from JIT code
grep -Eq 'frame #1: 0x[0-9a-f]+ JIT\(0x[0-9a-f]+\)`c at calls\.mini:7:12' "$T/bt"
grep -Eq 'frame #4: 0x[0-9a-f]+ JIT\(0x[0-9a-f]+\)`main at calls\.mini:22:9' "$T/bt"
echo "PASS backtrace"

# 2. removal and recompile at the same addresses
JITHERALD=gdb lldb_b -o 'b mj__builtin_callback' -o run -o 'frame select 1' \
    -o 'expr unsigned long $c = $pc' -o 'b mj_free' -o continue \
    -o 'platform shell echo REMOVED' -o 'image list' -o 'breakpoint delete 2' -o continue \
    -o 'platform shell echo AGAIN' -o 'image lookup -a $c' -o 'image list' \
    -- "${MJ[@]}" --remove --recompile "$CALLS" > "$T/rm"
cat "$T/rm"
sed -n '/^REMOVED/,/^AGAIN/p' "$T/rm" > "$T/removed"
grep -q 'minijit' "$T/removed"          # the image list was printed...
! grep -q 'JIT(0x' "$T/removed" || fail "a JIT image is left after the removal"
sed -n '/^AGAIN/,$p' "$T/rm" > "$T/again"
grep -Eq 'Summary: JIT\(0x[0-9a-f]+\)`c \+ [0-9]+ at calls\.mini:7:12' "$T/again"
echo "PASS remove"

# 3. attach after registration. LLDB 14 reads the list on attach but then resets its module
# list, losing that code; jitherald notices the debugger's breakpoint on the hook at its next
# call and announces every image again. Here the next call is the first jh_code_remove
# (--remove): at the second one, LLDB must know the pre-attach code that is still live.
rm -f "$T/pause"
JITHERALD=gdb "${MJ[@]}" --remove --pause-file "$T/pause" "$CALLS" > "$T/vm" 2>&1 &
vm=$!
kill_at_exit $vm
wait_for_file "$T/pause"
lldb_b -p "$(cat "$T/pause")" -o 'b jh_code_remove' -o "platform shell rm -f $T/pause" \
    -o continue -o continue -o 'platform shell echo SECOND' -o 'image list' \
    -o 'image lookup -s a' -o detach > "$T/attach"
rm -f "$T/pause"                        # lldb may have stopped early: never leave it waiting
wait_gone $vm || true
kill -9 $vm 2>/dev/null || true; wait $vm 2>/dev/null || true
cat "$T/attach"
sed -n '/^SECOND/,$p' "$T/attach" > "$T/second"
[ "$(grep -c 'JIT(0x' "$T/second")" -ge 3 ]   # 3 of the 4 images are still live...
grep -Eq 'JIT\(0x[0-9a-f]+\)`a' "$T/second"   # ...and a is found by name
echo "PASS attach"
