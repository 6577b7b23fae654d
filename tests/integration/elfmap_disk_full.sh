#!/usr/bin/env bash
# elfmap_disk_full.sh — elfmap's image files on a disk that fills up mid-run. Their metadata
# is written through a shared mapping of the file (src/channels/elfmap_write.c), where a
# store into a page the file system cannot back kills the process with SIGBUS: every page is
# allocated before the mapping reaches it, so a full disk is a write error instead, reported
# once, the channel switched off, the JIT unharmed (right results, exit 0). On a tmpfs of a
# few pages (root: CI runs as root), and with RLIMIT_FSIZE (always), whose limit fallocate
# meets too (EFBIG). The tmpfs sizes are chosen so that the disk fills up both while an
# image's first file is made and later, when a section outgrows its chunk (the path that
# grows the shared mapping); each run must be unharmed. Minijit's windows have an arena
# (the mapping lies there), LuaJIT's do not (it lies above the window): both are run.
# Without the allocation, minijit died of SIGBUS at 96 KiB and LuaJIT at 128 KiB.
. "$(dirname "$0")/lib.sh"
export JITHERALD=elfmap JITHERALD_DEBUG=1
many_mini "$T/many.mini"

# run NAME DIR PRELUDE: 4 threads of 200 functions each, PRELUDE in the shell that execs it
run() {
    local name=$1 dir=$2 prelude=$3 rc=0
    JITHERALD_DIR=$dir bash -c "$prelude"'; exec "$@"' minijit "$MINIJIT" --threads 4 \
        --print-result "$T/many.mini" >"$T/$name.out" 2>"$T/$name.err" || rc=$?
    [ $rc = 0 ] || { tail -5 "$T/$name.err"; fail "$name: minijit exited $rc ($(kill -l $((rc - 128)) 2>/dev/null || echo -))"; }
    [ "$(grep -c 'main returned 20100$' "$T/$name.out")" = 4 ] ||
        { cat "$T/$name.out"; fail "$name: wrong results"; }
}
# reported: the channel said why (once), or never needed more than the disk had
reported() { # name message
    local n; n=$(grep -c 'elfmap.*switched off' "$T/$1.err")
    [ "$n" -le 1 ] || { cat "$T/$1.err"; fail "$1: reported $n times"; }
    [ "$n" = 0 ] || grep -q "$2" "$T/$1.err" || { cat "$T/$1.err"; fail "$1: no '$2' in the report"; }
    echo "$n"
}

if [ "$(id -u)" = 0 ]; then
    full=0
    for kb in 64 96 128 192 256 384; do
        mkdir "$T/d$kb"
        mount -t tmpfs -o size=${kb}k,mode=700 tmpfs "$T/d$kb" || fail "cannot mount a tmpfs as root"
        at_exit "umount $T/d$kb"
        run "tmpfs$kb" "$T/d$kb" ':'
        n=$(reported "tmpfs$kb" "No space left")
        full=$((full + n))
        echo "ok: ${kb} KiB tmpfs: unharmed, $([ "$n" = 1 ] && echo "disk full reported once" || echo "it fitted")"
    done
    [ $full -ge 3 ] || fail "the disk filled up in only $full of the runs: the test no longer fills it"
    # LuaJIT's code lies near its binary, where no arena fits below it: the mapping then
    # lies above the window (elfmap_write.c, map_above), the other path to check
    if command -v luajit >/dev/null; then
        # stress.lua with FLUSHES flushes on a KB KiB tmpfs at $T/DIR, its output in
        # $T/OUT.out and .err; it must exit 0 whatever the disk does
        lj_tmpfs() { # DIR OUT KB FLUSHES
            mkdir "$T/$1"
            mount -t tmpfs -o size=${3}k,mode=700 tmpfs "$T/$1" || fail "cannot mount a tmpfs"
            at_exit "umount $T/$1"
            local rc=0
            JITHERALD_LIB=$B/libjitherald.so.0 LUA_PATH="$R/adapters/luajit/?.lua;;" \
                JITHERALD_DIR=$T/$1 luajit -ljitherald "$R/bench/luajit/stress.lua" 100 1 "$4" count \
                >"$T/$2.out" 2>"$T/$2.err" || rc=$?
            [ $rc = 0 ] || { tail -5 "$T/$2.err"; fail "luajit on $3 KiB, $4 flushes: exited $rc"; }
        }
        full=0
        for kb in 128 192 256; do
            lj_tmpfs "l$kb" "lj$kb" "$kb" 1
            full=$((full + $(reported "lj$kb" "No space left")))
            echo "ok: LuaJIT on a ${kb} KiB tmpfs: unharmed"
        done
        [ $full -ge 1 ] || fail "LuaJIT never filled the disk: the test no longer fills it"
        # a later window's file, after the first's: what the file system can do was asked
        # once (the first page's fallocate: elfmap_write.c, jh__em_wmap), and the disk fills
        # in the zeros that allocate the later file's metadata
        for kb in 448 640; do
            lj_tmpfs "w$kb" "lw$kb" "$kb" 4
            [ "$(reported "lw$kb" "No space left")" = 1 ] || fail "lw$kb: the disk never filled"
            files=$(find "$T/w$kb" -name 'jit-*.elf' | wc -l)
            [ "$files" -ge 2 ] || fail "lw$kb: the disk filled at the first window's file ($files)"
            echo "ok: LuaJIT on a ${kb} KiB tmpfs, 4 flushes: full after $files image files, unharmed"
        done
    else
        echo "SKIP luajit is not installed: its case did not run"
        skipped=1
    fi
else
    echo "SKIP not root: the tmpfs cases did not run (RLIMIT_FSIZE below still covers the write error path)"
    skipped=1
fi
mkdir -m 700 "$T/fs"
# SIGXFSZ ignored, as a JIT host would: fallocate and pwrite then fail with EFBIG
for kb in 64 4160 4240 4400; do
    rm -rf "${T:?}/fs/"*
    run "fsize$kb" "$T/fs" "trap '' XFSZ; ulimit -f $kb"
    [ "$(reported "fsize$kb" "too large")" = 1 ] || fail "fsize$kb: the limit was never met"
    echo "ok: RLIMIT_FSIZE ${kb} KiB: write error reported once, JIT unharmed"
done
[ -z "${skipped:-}" ] || exit 77
echo "PASS: a full disk and a file-size limit are elfmap write errors, never a SIGBUS"
