#!/usr/bin/env bash
# Core dumps of an elfmap-only process (docs/cores.md). The demo JIT runs calls.mini with
# JITHERALD=elfmap alone and is stopped in the C callback its JIT code calls
# (main -> a -> b -> c -> callback); gdb writes a core (gcore), with coredump_filter 0x37
# so that the core holds the code pages too. Then, as a user would:
#   - control: gdb on the core alone shows ?? for the four JIT frames;
#   - `jitherald core CORE > jit.gdb` and `gdb -x jit.gdb EXE CORE`: bt names c, b, a and
#     main with calls.mini:7, 12, 17, 22, then mj_call and the C main below them;
#   - eu-stack --core unwinds through the JIT frames down to the C main, and names them
#     (c, b, a: elfutils finds each image by its first page, which elfmap maps in the
#     window's arena, as the image's first PT_LOAD says: docs/cores.md);
#   - the image moved elsewhere: found with --dir, not without (exit 1, said on stderr);
#   - the image rewritten since (a code byte changed): refused, the core holds those bytes;
#   - a core whose image path holds a newline (a gdb command after it): refused;
#   - `gcore PID` of the demo running fib.mini: fib innermost, named down to the C main;
#   - on "another machine": the images rebuilt from the audit log of the same run
#     (`jitherald log FILE to-elf DIR`, JITHERALD=elfmap,auditlog) name the same frames.
. "$(dirname "$0")/lib.sh"
require_tool gdb gdb
require_tool eu-stack elfutils
cd "$T"

# Runs the demo under gdb with CHANNELS, stops in the callback and writes core.NAME.
make_core() { # NAME CHANNELS
    mkdir -p "d.$1"
    (echo 0x37 > /proc/self/coredump_filter
     JITHERALD=$2 JITHERALD_DIR=$T/d.$1 exec timeout 120 gdb -q -nx -batch \
        -ex 'set pagination off' -ex 'break mj__builtin_callback' -ex run \
        -ex "gcore $T/core.$1" -ex kill --args "$MINIJIT" "$MINI/calls.mini") \
        > "gcore.$1.out" 2>&1 || true
    [ -s "core.$1" ] || { cat "gcore.$1.out"; fail "no core written"; }
}
bt() { # CORE [gdb args...]
    local core=$1; shift
    timeout 120 gdb -q -nx -batch "$@" -ex 'set pagination off' -ex bt "$MINIJIT" "$core" 2>&1
}
names_jit_frames() { # FILE
    grep -Eq '^#1  0x[0-9a-f]+ in c \(\) at .*calls\.mini:7$' "$1" &&
    grep -Eq '^#2  0x[0-9a-f]+ in b \(\) at .*calls\.mini:12$' "$1" &&
    grep -Eq '^#3  0x[0-9a-f]+ in a \(\) at .*calls\.mini:17$' "$1" &&
    grep -Eq '^#4  0x[0-9a-f]+ in main \(\) at .*calls\.mini:22$' "$1" &&
    grep -Eq '^#5  0x[0-9a-f]+ in mj_call ' "$1" &&
    grep -Eq '^#[0-9]+ +0x[0-9a-f]+ in main \(argc=' "$1" &&
    ! grep -Eq '^#[0-9]+ +0x[0-9a-f]+ in \?\? \(\)' "$1"
}

make_core a elfmap
grep -q 'jit-[0-9]*-1\.elf' <(eu-readelf -n core.a) || fail "the core's NT_FILE lists no image"

# control: without the command, the JIT frames have no names
bt core.a > plain.out
cat plain.out
grep -Eq '^#0  mj__builtin_callback ' plain.out || fail "gdb did not read the core"
grep -Eq '^#1  0x[0-9a-f]+ in \?\? \(\)' plain.out ||
    fail "gdb named the JIT frames without the command: the control no longer holds"

"$CLI" core core.a > jit.gdb 2> core.err || { cat core.err; fail "jitherald core"; }
cat jit.gdb core.err
grep -Eq "^add-symbol-file \"$T/d\.a/jit-[0-9]+-1\.elf\"\$" jit.gdb || fail "no add-symbol-file"
grep -Eq '[1-9][0-9]* bytes checked against the core' jit.gdb ||
    fail "the code bytes in the core were not compared with the image"
bt core.a -x jit.gdb > named.out
cat named.out
names_jit_frames named.out || fail "gdb -x jit.gdb: the JIT frames are not named"

# eu-stack: through the four JIT frames to mj_call and the C main
eu-stack --core core.a -e "$MINIJIT" > eu.out 2>&1 || true
cat eu.out
grep -Eq '^#0 +0x[0-9a-f]+ mj__builtin_callback$' eu.out &&
    grep -Eq '^#5 +0x[0-9a-f]+ mj_call$' eu.out && grep -Eq '^#[0-9]+ +0x[0-9a-f]+ main$' eu.out ||
    fail "eu-stack did not unwind through the JIT frames"
grep -Eq '^#1 +0x[0-9a-f]+ c$' eu.out && grep -Eq '^#3 +0x[0-9a-f]+ a$' eu.out ||
    fail "eu-stack --core does not name the JIT frames"

# moved: the path in the core is gone
mkdir moved
mv d.a/* moved/
! "$CLI" core core.a > m.gdb 2> m.err || fail "jitherald core found an image that is gone"
cat m.err
grep -q 'no image found' m.err || fail "no message for the missing image"
"$CLI" core --dir "$T/moved" core.a > m.gdb 2> m.err || { cat m.err; fail "--dir"; }
bt core.a -x m.gdb > moved.out
names_jit_frames moved.out || { cat moved.out; fail "the moved image does not name the frames"; }

# rewritten: one byte of c's code changed in the file
img=$(ls moved/jit-*.elf)
cp "$img" tampered.elf
off=$(readelf -lW tampered.elf | awk '$1 == "LOAD" && / R E / { print $2; exit }')   # the code's
printf '\xcc' | dd of=tampered.elf bs=1 seek=$((off + 1)) conv=notrunc 2> /dev/null
mkdir t && cp tampered.elf "t/$(basename "$img")"
! "$CLI" core --dir "$T/t" core.a > t.gdb 2> t.err || fail "a rewritten image was used"
cat t.err
grep -q 'differ from the core' t.err || fail "no message for the rewritten image"
! grep -q add-symbol-file t.gdb || fail "a command for the rewritten image"

# a core whose image path holds a newline: printed, it would end the command and start
# another one (`shell ...`) when gdb sources the file; refused instead
python3 - "$T/core.a" "$T/nl.core" <<'PY'
import sys
b = bytearray(open(sys.argv[1], 'rb').read())
open(sys.argv[2], 'wb').write(bytes(b).replace(b'/d.a/jit-', b'\nd.a/jit-'))
PY
! "$CLI" core --dir "$T/moved" nl.core > nl.gdb 2> nl.err || fail "an image path with a newline was accepted"
cat nl.err
grep -q 'control character' nl.err || fail "no message for the path with a newline"
[ ! -s nl.gdb ] || { cat nl.gdb; fail "commands printed for a path with a newline"; }

# gcore PID on a running JIT, stopped wherever it was in fib's recursion (any instruction
# of fib, prologue and epilogue included): the innermost frame is a JIT frame, and the
# image's CFI unwinds from it through fib's frames and main's to the C main.
(echo 0x37 > /proc/self/coredump_filter
 JITHERALD=elfmap JITHERALD_DIR=$T/d.c exec "$MINIJIT" --pause-file "$T/pause" \
    "$MINI/fib.mini" 45 > /dev/null) &
vm=$!
kill_at_exit $vm
wait_for_file "$T/pause"
pid=$(cat "$T/pause")
rm "$T/pause"
# into fib's recursion: once it has run 0.2 s of CPU time (a loaded machine may take long
# to give it that much; 60 s bounds a hang)
end=$((SECONDS + 60))
until [ "$(awk '{ print $14 + $15 }' "/proc/$pid/stat")" -ge 20 ]; do
    [ $SECONDS -lt $end ] || fail "the demo never ran"
    sleep 0.05
done
timeout 120 gcore -o "$T/core.c" "$pid" > gcore.c.out 2>&1 || { cat gcore.c.out; fail "gcore PID"; }
kill -9 $vm
"$CLI" core "core.c.$pid" > c.gdb 2> c.err || { cat c.err; fail "jitherald core (gcore PID)"; }
bt "core.c.$pid" -x c.gdb > running.all
# (gdb shows the innermost frame once as it opens the core, before the symbols are added)
sed -n '/^add symbol table from file/,$p' running.all > running.out
grep -E '^#(0|1|2) ' running.out
tail -4 running.out
grep -Eq '^#0  (0x[0-9a-f]+ in )?fib \(\) at .*fib\.mini:[0-9]+$' running.out &&
    grep -Eq '^#[0-9]+ +0x[0-9a-f]+ in main \(\) at .*fib\.mini:12$' running.out &&
    grep -Eq '^#[0-9]+ +0x[0-9a-f]+ in mj_call ' running.out &&
    grep -Eq '^#[0-9]+ +0x[0-9a-f]+ in main \(argc=' running.out &&
    ! grep -Eq '^#[0-9]+ +0x[0-9a-f]+ in \?\? \(\)' running.out ||
    { cat running.out; fail "gcore PID: the JIT frames are not all named down to the C main"; }

# another machine: the same run's images rebuilt from its audit log
make_core b elfmap,auditlog
"$CLI" log "$(ls d.b/*.jhlog)" to-elf rebuilt > rebuilt.txt || fail "log to-elf"
cat rebuilt.txt
rm -f d.b/*.elf
"$CLI" core --dir "$T/rebuilt" core.b > r.gdb 2> r.err || { cat r.err; fail "rebuilt images"; }
cat r.gdb
bt core.b -x r.gdb > rebuilt.out
names_jit_frames rebuilt.out || { cat rebuilt.out; fail "the rebuilt image does not name the frames"; }
echo PASS
