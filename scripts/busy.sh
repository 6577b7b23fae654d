#!/usr/bin/env bash
# busy.sh N COMMAND [ARGS...] — runs COMMAND while N busy processes keep N cores busy, and
# ends them when COMMAND ends (its exit status is busy.sh's). It is how the tests prove they
# do not depend on an idle machine: `JH_LOAD=2 make test` (tests/run.sh calls this script).
#
# Each busy process is a shell loop that counts, and every few tens of milliseconds checks
# that this script still runs: killed without the chance to clean up (SIGKILL, a CI job
# cancelled), it leaves no loop spinning behind it.
set -u
[ $# -ge 2 ] && [ "$1" -ge 0 ] 2>/dev/null || { echo "usage: busy.sh N COMMAND [ARGS...]" >&2; exit 2; }
n=$1; shift
pids=()
stop() {
    local p
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
    pids=()
}
trap stop EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
for ((i = 0; i < n; i++)); do
    sh -c 'while kill -0 "$0" 2>/dev/null; do i=0; while [ $i -lt 20000 ]; do i=$((i + 1)); done; done' \
        $$ </dev/null >/dev/null 2>&1 &
    pids+=($!)
done
echo "busy.sh: $n busy process(es) running: ${pids[*]}" >&2
rc=0
"$@" || rc=$?
exit $rc
