#!/usr/bin/env bash
# elfmap_container.sh — a JIT in a container (docs/fleet.md, "Containers"): its own pid and
# mount namespaces (unshare --pid --fork --mount-proc) and a private /tmp (a directory of
# ours bind-mounted there, seen only inside), profiled by perf run outside:
#   - perfmap: the demo (pid 1 inside) writes /tmp/perf-1.map in its /tmp; perf record -p
#     from outside, perf report while it runs: fib named (perf finds the map by the pid
#     inside, in the process's mount namespace);
#   - elfmap: its images are /tmp/jitherald-UID/jit-1-N.elf inside, a path that is not that
#     file outside; perf report while it runs names fib from the image, and again after
#     the container is gone, through the build-id cache perf record filled;
#   - `jitherald run -c elfmap -- run_vm partial 40` inside: the VM (which knows nothing of
#     jitherald) sees each function's page mapped from an image when its map line is
#     written, and exits 0.
# Needs root (mount namespaces): skipped, loudly, only where unshare is not permitted.
. "$(dirname "$0")/lib.sh"
require_tool perf linux-perf
require_tool unshare util-linux
VM=$(program run_vm)
unshare --pid --fork --mount-proc true 2>/dev/null ||
    skip "unshare --pid --fork --mount-proc is not permitted here (root needed)"
private_perf_cache
U=$(id -u)
cd "$T"

# in_container NAME CMD...: runs CMD as pid 1 of a new pid+mount namespace whose /tmp is
# $T/NAME.tmp; stdout/stderr to NAME.out/err. A source or build tree under /tmp (a CI's
# clone) is bound at its own path inside that /tmp first, so the container still sees the
# programs (the binds live in the container's mount namespace only).
in_container() {
    local name=$1; shift
    mkdir -p "$name.tmp"
    chmod 1777 "$name.tmp"
    unshare --pid --fork --mount-proc bash -c '
        new=$0 r=$1 b=$2; shift 2
        for d in "$r" "$b"; do
            case $d in /tmp/*) mkdir -p "$new${d#/tmp}" && mount --bind "$d" "$new${d#/tmp}" || exit 90 ;; esac
        done
        mount --rbind "$new" /tmp && exec "$@"' \
        "$T/$name.tmp" "$R" "$B" "$@" >"$name.out" 2>"$name.err"
}
# container NAME CMD...: the same in the background; sets CPID (its pid outside)
container() {
    local name=$1; shift
    in_container "$name" "$@" &
    local us=$! end=$((SECONDS + 30))
    kill_at_exit $us
    CPID=
    until [ -n "$CPID" ]; do
        CPID=$(pid1_below "$us") || true
        [ $SECONDS -lt $end ] || { cat "$name.out" "$name.err"; fail "$name: the container never started"; }
        sleep 0.05
    done
    kill_at_exit "$CPID"
}
# pid1_below PID: the process under PID that is pid 1 of a pid namespace of its own
pid1_below() {
    local c
    for c in $(cat /proc/"$1"/task/*/children 2>/dev/null); do
        if awk '/^NSpid:/ { exit !(NF == 3 && $3 == 1) }' "/proc/$c/status" 2>/dev/null; then
            echo "$c"; return 0
        fi
        pid1_below "$c" && return 0
    done
    return 1
}
# profile NAME CHANNELS: the demo in a container, perf record -p from outside for 2 s
profile() {
    container "$1" env JITHERALD=$2 "$MINIJIT" --repeat 1000000 "$MINI/fib.mini" 24
    local end=$((SECONDS + 60)) want=$3
    until [ -e "$T/$1.tmp/$want" ] || compgen -G "$T/$1.tmp/$want" >/dev/null; do
        kill -0 "$CPID" 2>/dev/null || { cat "$1.err"; fail "$1: the demo ended"; }
        [ $SECONDS -lt $end ] || { ls -R "$1.tmp"; cat "$1.err"; fail "$1: no $want in the container's /tmp"; }
        sleep 0.05
    done
    grep -q "^NSpid:.*[[:space:]]1$" "/proc/$CPID/status" || fail "$1: the demo is not pid 1 inside"
    perf record -q -g -p "$CPID" -o "$1.data" -- sleep 2 >"$1.rec" 2>&1 || { cat "$1.rec"; fail "$1: perf record"; }
    perf report -i "$1.data" --stdio --no-children --sort dso,sym 2>/dev/null | grep -v '^#' | grep . >"$1.rep" || true
    head -3 "$1.rep"
}

profile pm perfmap perf-1.map
[ ! -e /tmp/perf-1.map ] || [ /tmp/perf-1.map -ot pm.data ] || fail "perfmap: a map outside the container"
grep -E '[0-9.]+% +\[JIT\] tid [0-9]+ +\[\.\] fib$' pm.rep || fail "perfmap: perf outside did not name fib"
kill -9 "$CPID"

profile em elfmap "jitherald-$U/jit-1-*.elf"
grep -E '[0-9.]+% +jit-1-[0-9]+\.elf +\[\.\] fib$' em.rep || fail "elfmap: perf outside did not name fib"
img=$(perf script -i em.data --show-mmap-events 2>/dev/null | sed -n 's/.*MMAP2.* r-xp \(.*jit-1-[0-9]*\.elf\)$/\1/p' | head -1)
echo "the image as the container names it: $img"
[ "${img#/tmp/jitherald-$U/}" != "$img" ] || fail "elfmap: unexpected image path $img"
! cmp -s "$img" "$T/em.tmp/${img#/tmp/}" || fail "the container's /tmp is not private"
kill -9 "$CPID"
wait_gone "$CPID" 30 || true
rm -rf em.tmp
perf report -i em.data --stdio --no-children --sort dso,sym 2>/dev/null | grep -v '^#' | grep . >em.after || true
grep -E '[0-9.]+% +jit-1-[0-9]+\.elf +\[\.\] fib$' em.after ||
    { head em.after; fail "elfmap: perf report after the container is gone did not name fib (build-id cache)"; }

in_container run timeout 120 "$CLI" run -c elfmap -- "$VM" partial 40 ||
    { cat run.out run.err; fail "jitherald run inside the container: exit $?"; }
cat run.out
grep -q '^partial: 40 of 40 swapped when their line was written' run.out ||
    { cat run.err; fail "jitherald run inside the container"; }
ls "$T/run.tmp/jitherald-$U/" | grep -E '^jit-[0-9]+-[0-9]+\.elf$' || fail "jitherald run: no image in the container's /tmp"
echo "PASS: a JIT in its own pid and mount namespaces is named by perf outside (perfmap, elfmap, elfmap after exit) and jitherald run works inside"
