#!/usr/bin/env bash
# A debuginfod server (Debian's debuginfod) started here over a directory the elfmap images
# were published to hands them out by build-id: on "another machine" (clean HOME and
# caches, the images deleted) perf report names fib with fib.mini:N from images fetched
# through DEBUGINFOD_URLS, and eu-addr2line resolves fib's address in the fetched image.
# Loopback only: debuginfod 0.188 listens on every interface, so the server and its
# clients run in a network namespace of their own that has nothing but lo.
. "$(dirname "$0")/lib.sh"
require_tool perf linux-perf
require_tool debuginfod debuginfod
require_tool debuginfod-find debuginfod
require_tool eu-addr2line elfutils
own_netns "$@"
cd "$T"
cp "$MINI/fib.mini" .
JITHERALD=elfmap JITHERALD_DIR=$T/d command perf --buildid-dir "$T/c1" record -q \
    -o perf.data "$MINIJIT" fib.mini 30 > out 2> rec.err || { cat rec.err; fail "perf record"; }
# Publishing: the images go to the directory the server scans (one per host in a fleet).
mkdir pub
cp d/*.elf pub/
id=$(readelf -n pub/*.elf | sed -n 's/.*Build ID: //p' | head -1)
addr=$(readelf -sW pub/*.elf | awk '$8 == "fib" { print $2 }')
[ -n "$id" ] && [ "$id" != 0000000000000000000000000000000000000000 ] && [ -n "$addr" ] ||
    fail "no build-id or no fib in the image"
rm -rf d c1

port=$((20000 + RANDOM % 20000))
debuginfod -F -p "$port" -d "$T/db.sqlite" "$T/pub" > dbg.log 2>&1 &
srv=$!
kill_at_exit $srv
export DEBUGINFOD_URLS=http://127.0.0.1:$port DEBUGINFOD_CACHE_PATH=$T/dcache HOME=$T/home2
mkdir -p "$HOME"
# the server scans in the background: ask until it knows the image (120 s at most, a bound
# for a hang: a busy machine scans late; the client caches a miss, so each early question
# gets a cache of its own)
end=$((SECONDS + 120))
while [ $SECONDS -lt $end ]; do
    rm -rf "$T/poll"
    DEBUGINFOD_CACHE_PATH=$T/poll debuginfod-find executable "$id" > /dev/null 2>&1 && break
    kill -0 $srv 2>/dev/null || { cat dbg.log; fail "debuginfod exited"; }
    sleep 0.1
done
got=$(debuginfod-find executable "$id" 2> /dev/null) || true
[ -n "${got:-}" ] || { cat dbg.log; fail "debuginfod never served build-id $id"; }

# perf report: Debian's perf is built without libdebuginfod (perf version --build-options:
# debuginfod OFF), so the images it needs are fetched by build-id and put in its cache.
command perf --buildid-dir "$T/c2" buildid-list -i perf.data | while read -r bid path; do
    f=$(debuginfod-find executable "$bid" 2> /dev/null) || continue
    command perf --buildid-dir "$T/c2" buildid-cache -a "$f"
done
command perf --buildid-dir "$T/c2" report -i perf.data --stdio --no-children \
    --sort dso,sym,srcline 2> /dev/null > rep
grep -v '^#' rep | grep -v '^$' | head -5
grep -E '[0-9.]+%.*\[\.\] fib +fib\.mini:[0-9]+' rep ||
    fail "perf report did not name fib with its line from the served image"

# eu-addr2line on the image fetched by build-id: fib, fib.mini, the line of its body
eu-addr2line -f -e "$got" "0x$(printf %x $((0x$addr + 12)))" > a2l
cat a2l
grep -qx fib a2l && grep -qE 'fib\.mini:[0-9]+' a2l || fail "eu-addr2line did not resolve fib"

# gdb cannot ask debuginfod for a JIT image itself (docs/buildid.md): given the fetched
# image, an address from a crash report resolves to the function and its line.
if command -v gdb > /dev/null; then
    a=0x$(printf %x $((0x$addr + 12)))
    gdb -nx -batch -ex "add-symbol-file $got" -ex "info symbol $a" -ex "info line *$a" \
        > gdb.out 2>&1
    tail -2 gdb.out
    grep -q '^fib + 12 in section \.text' gdb.out && grep -qE '^Line [0-9]+ of "fib\.mini"' gdb.out ||
        fail "gdb did not resolve fib in the fetched image"
fi
echo PASS
