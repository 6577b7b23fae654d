#!/usr/bin/env bash
# run_php_gdb.sh — `jitherald run -c gdb -- gdb --args php ...` with PHP 8.2's tracing JIT
# writing its perf map (opcache.jit_debug=0x10), what a user types: a pending breakpoint on
# the trace the JIT makes of spin()'s loop (TRACE-1$spin$4, `break TRACE_1_spin_4`) hits,
# and gdb names the frame and the address. Two things stood in the way, both checked here:
# PHP loads opcache.so, its JIT, with RTLD_DEEPBIND, so its writes bypassed the preload
# (adapters/preload/deepbind.c); and PHP's executable defines its own
# __jit_debug_descriptor, which gdb 13 read instead of jitherald's (docs/gdb.md, "A program
# with its own descriptor"). Control: the same run with the descriptor's section not
# marked executable (as before that fix) leaves the breakpoint pending.
# And bt from PHP's own code called by a trace (ftell(), after 1,000 calls: long since
# compiled into the loop's trace) names the trace and ends there, cleanly: a trace runs in
# the VM's frame, entered by a jmp, with no frame of its own, and jitherald describes it
# as the place unwinding ends (issue 24, defect 3). Control: with JITHERALD_RUN_FP=0 (no
# description from the code's bytes) gdb's own analysis took [rsp] for the return address
# and went on into garbage (`#2 0x0000000004a100ba in ?? ()`, `#3 0x0 in ?? ()`).
. "$(dirname "$0")/lib.sh"
require_tool php php8.2-cli
require_tool gdb gdb
php -d opcache.enable_cli=1 -r 'exit(function_exists("opcache_get_status") ? 0 : 1);' ||
    skip "php has no opcache (Debian package php8.2-opcache)"
RUN_SO=$B/libjitherald-run.so
[ -f "$RUN_SO" ] || fail "$RUN_SO not built (make)"
cd "$T"
cat > spin.php <<'PHP'
<?php
function spin($n) {
    $s = 0;
    for ($i = 0; $i < $n; $i++) {
        $s += $i % 7;
    }
    return $s;
}
$t = 0;
for ($k = 0; $k < 200; $k++) {
    $t += spin(100000);
}
echo "pid ", getmypid(), " sum $t\n";
PHP
# file_update_protection=0: opcache (and so the JIT) skips a script changed in the last 2 s
PHPF=(-d opcache.enable_cli=1 -d opcache.jit_buffer_size=64M -d opcache.jit=tracing
      -d opcache.jit_debug=0x10 -d opcache.file_update_protection=0)
GDB=(gdb -q -nx -batch -ex 'set breakpoint pending on' -ex 'break TRACE_1_spin_4' -ex run
     -ex bt -ex 'info symbol $pc' -ex kill --args php "${PHPF[@]}" spin.php)

# without jitherald: gdb knows nothing of PHP's JIT
timeout 120 "${GDB[@]}" > plain.gdb 2>&1 || true
cat plain.gdb
grep -q 'sum 59999000' plain.gdb || fail "php did not run to its end without jitherald"
! grep -q '^Breakpoint 1, ' plain.gdb || fail "gdb names the trace without jitherald?"
pid=$(sed -n 's/^pid \([0-9]*\) sum .*/\1/p' plain.gdb)
[ -n "$pid" ] && at_exit "rm -f /tmp/perf-$pid.map"
[ -n "$pid" ] && grep -q ' TRACE-1\$spin\$4$' "/tmp/perf-$pid.map" ||
    fail "PHP's perf map has no TRACE-1\$spin\$4: the tracing JIT did not compile the loop"
echo "PASS without jitherald: PHP's map names TRACE-1\$spin\$4, gdb does not"

for n in 1 2 3; do
    timeout 120 "$CLI" run -c gdb -- "${GDB[@]}" > "run.$n.gdb" 2>&1 || true
    cat "run.$n.gdb"
    forget_map "run.$n.gdb"
    grep -Eq '^Breakpoint 1, 0x[0-9a-f]+ in TRACE-1\$spin\$4 \(\)' "run.$n.gdb" ||
        fail "run $n: the pending breakpoint on TRACE_1_spin_4 never hit"
    grep -Eq '^#0 +0x[0-9a-f]+ in TRACE-1\$spin\$4 \(\)' "run.$n.gdb" ||
        fail "run $n: bt does not name the trace"
    grep -Eq '^TRACE_1_spin_4 in section \.text of <in-memory@0x' "run.$n.gdb" ||
        fail "run $n: info symbol \$pc does not name the trace"
    grep -q '/php[0-9.]* also defines __jit_debug_descriptor and comes first: gdb names the code of both, lldb only that one'"'"'s' "run.$n.gdb" ||
        fail "run $n: no warning that lldb sees only PHP's own descriptor"
done
echo "PASS 3 runs: gdb breaks in PHP's tracing JIT code by name"

# bt from native code called by a trace
cat > ftell.php <<'PHP'
<?php
function spin($f, $n) {
    $s = 0;
    for ($i = 0; $i < $n; $i++) {
        $s += ftell($f) + $i % 7;
    }
    return $s;
}
$f = fopen("php://memory", "r");
$t = 0;
for ($k = 0; $k < 200; $k++) {
    $t += spin($f, 10000);
}
echo "pid ", getmypid(), " sum $t\n";
PHP
BT=(gdb -q -nx -batch -ex 'break zif_ftell' -ex 'ignore 1 1000' -ex run -ex bt
    -ex 'info proc mappings' -ex kill --args php "${PHPF[@]}" ftell.php)
for n in 1 2 3; do
    timeout 300 "$CLI" run -c gdb -- "${BT[@]}" > "bt.$n.gdb" 2>&1 || true
    forget_map "bt.$n.gdb"
    grep -a '^#' "bt.$n.gdb"
    grep -Eq '^#0 +0x[0-9a-f]+ in zif_ftell \(\)' "bt.$n.gdb" ||
        { cat "bt.$n.gdb"; fail "run $n: no stop in zif_ftell"; }
    grep -Eq '^#1 +0x[0-9a-f]+ in TRACE-1\$spin\$4 \(\)$' "bt.$n.gdb" ||
        fail "run $n: zif_ftell's caller is not the trace"
    bt_ends_clean "bt.$n.gdb"
    ! grep -q '^#2 ' "bt.$n.gdb" || fail "run $n: bt goes on past the trace, which has no frame"
done
echo "PASS 3 runs: bt from PHP's ftell names the trace that called it and ends there"
JITHERALD_RUN_FP=0 timeout 300 "$CLI" run -c gdb -- "${BT[@]}" > bt.control.gdb 2>&1 || true
forget_map bt.control.gdb
grep -a '^#' bt.control.gdb
grep -Eq '^#1 +0x[0-9a-f]+ in TRACE-1\$spin\$4 \(\)$' bt.control.gdb ||
    fail "control: zif_ftell's caller is not the trace"
! (bt_ends_clean bt.control.gdb) >/dev/null ||
    fail "control: without a description gdb's bt ends cleanly too: the check proves nothing"
echo "PASS control: without the description, bt past the trace shows garbage"

# control: the library as ld wrote it, descriptor section not marked executable
mkdir unmarked
cp "$RUN_SO" "$B/libjitherald.so.0" unmarked/
f=unmarked/libjitherald.so.0
at=$(( $(od -An -tu8 -j40 -N8 "$f" | tr -d ' ') + 8 + $(od -An -tu2 -j58 -N2 "$f" | tr -d ' ') *
       $(readelf -W -S "$f" | sed -n 's/^ *\[ *\([0-9]*\)\] \.jh_gdb_jit .*/\1/p') ))
printf '\003' | dd of="$f" bs=1 seek="$at" conv=notrunc status=none
readelf -W -S "$f" | grep -Eq '\.jh_gdb_jit +PROGBITS .* WA ' || fail "the control is still marked"
LD_PRELOAD=$T/unmarked/libjitherald-run.so JITHERALD_RUN=gdb JITHERALD_DEBUG=1 \
    timeout 120 "${GDB[@]}" > unmarked.gdb 2>&1 || true
cat unmarked.gdb
grep -q "$T/unmarked/libjitherald.so.0" <(LD_PRELOAD=$T/unmarked/libjitherald-run.so \
    cat /proc/self/maps) || fail "the control does not load the unmarked library"
grep -q 'sum 59999000' unmarked.gdb || fail "control: php did not run to its end"
grep -Eq 'map_lines=[1-9]' unmarked.gdb || fail "control: PHP's map was not heard"
! grep -q '^Breakpoint 1, ' unmarked.gdb ||
    fail "control: gdb sees the code without the marked section: the control is wrong"
echo "PASS control: heard, but with the section unmarked gdb reads PHP's empty descriptor"
echo PASS
