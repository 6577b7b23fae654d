#!/usr/bin/env bash
# A core of an elfmap-only process symbolized on "another machine" through debuginfod
# (docs/cores.md, "Another machine and debuginfod"): the demo stopped in the C callback its
# JIT code calls (main -> a -> b -> c -> callback), a core from gdb's gcore; the images are
# published to a directory a debuginfod server here scans, then deleted. With nothing but
# the core, the executable and DEBUGINFOD_URLS:
#   - `jitherald core CORE` reads each image's build-id from the core (its first page is
#     there), fetches the image by id (debuginfod-find) and prints its add-symbol-file;
#     gdb then names c, b, a, main with calls.mini lines, down to the C main;
#   - eu-stack --core names the JIT frames too: libdwfl finds the image by the id in the
#     core and asks debuginfod for it.
#   Control: without DEBUGINFOD_URLS, jitherald core finds no image (exit 1) and eu-stack
#   names none of the JIT frames.
# Loopback only, in a network namespace of its own (as buildid_debuginfod.sh).
. "$(dirname "$0")/lib.sh"
require_tool gdb gdb
require_tool eu-stack elfutils
require_tool debuginfod debuginfod
require_tool debuginfod-find debuginfod
own_netns "$@"
cd "$T"

(JITHERALD=elfmap JITHERALD_DIR=$T/d exec timeout 120 gdb -q -nx -batch \
    -ex 'set pagination off' -ex 'break mj__builtin_callback' -ex run \
    -ex "gcore $T/core" -ex kill --args "$MINIJIT" "$MINI/calls.mini") > gcore.out 2>&1 || true
[ -s core ] || { cat gcore.out; fail "no core written"; }
ls d/jit-*.elf > /dev/null || fail "no image written"
ids=$(for f in d/jit-*.elf; do readelf -n "$f" | sed -n 's/.*Build ID: //p'; done)

# publishing, then "another machine": the images are gone
mkdir pub
cp d/jit-*.elf pub/
rm -rf d

export HOME=$T/home DEBUGINFOD_CACHE_PATH=$T/dcache
mkdir -p "$HOME"
# control first (no server named): nothing finds the images
"$CLI" core core > none.gdb 2> none.err && fail "control: jitherald core found an image with no server"
cat none.err
! grep -q '^add-symbol-file' none.gdb || fail "control: an add-symbol-file with no image"
eu-stack --core core -e "$MINIJIT" > es0.txt 2>&1 || true
! grep -Eq '^#[0-9]+ +0x[0-9a-f]+ (c|b|a)$' es0.txt ||
    { cat es0.txt; fail "control: eu-stack named JIT frames with the images gone"; }

port=$((20000 + RANDOM % 20000))
debuginfod -F -p "$port" -d "$T/db.sqlite" "$T/pub" > dbg.log 2>&1 &
srv=$!
kill_at_exit $srv
export DEBUGINFOD_URLS=http://127.0.0.1:$port
# the server scans in the background: ask until it serves every image (120 s at most; the
# client caches a miss, so each early question gets a cache of its own)
for id in $ids; do
    end=$((SECONDS + 120))
    until DEBUGINFOD_CACHE_PATH=$T/poll.$SECONDS debuginfod-find executable "$id" > /dev/null 2>&1; do
        kill -0 $srv 2>/dev/null || { cat dbg.log; fail "debuginfod exited"; }
        [ $SECONDS -lt $end ] || { cat dbg.log; fail "debuginfod never served $id"; }
        sleep 0.2
    done
done
rm -rf "$T"/poll.*

"$CLI" core core > jit.gdb 2> core.err || { cat jit.gdb core.err; fail "jitherald core with debuginfod"; }
cat jit.gdb core.err
grep -q '^add-symbol-file ' jit.gdb || fail "no add-symbol-file"
timeout 120 gdb -q -nx -batch -x jit.gdb -ex 'set pagination off' -ex bt "$MINIJIT" core \
    > bt.out 2>&1 || true
cat bt.out
grep -Eq '^#1  0x[0-9a-f]+ in c \(\) at .*calls\.mini:7$' bt.out &&
grep -Eq '^#2  0x[0-9a-f]+ in b \(\) at .*calls\.mini:12$' bt.out &&
grep -Eq '^#3  0x[0-9a-f]+ in a \(\) at .*calls\.mini:17$' bt.out &&
grep -Eq '^#4  0x[0-9a-f]+ in main \(\) at .*calls\.mini:22$' bt.out &&
grep -Eq '^#[0-9]+ +0x[0-9a-f]+ in main \(argc=' bt.out ||
    fail "gdb did not name the JIT frames of the core from the images debuginfod served"

eu-stack --core core -e "$MINIJIT" > es.txt 2>&1 || true
cat es.txt
for f in c b a; do
    grep -Eq "^#[0-9]+ +0x[0-9a-f]+ $f\$" es.txt || fail "eu-stack --core: no frame $f through debuginfod"
done
grep -Eq ' mj_call$' es.txt || fail "eu-stack --core does not unwind through the JIT frames"
echo "PASS: a core of an elfmap-only process symbolized through debuginfod alone (gdb via jitherald core, eu-stack)"
