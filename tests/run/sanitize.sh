#!/usr/bin/env bash
# tests/run/sanitize.sh BUILD address|thread — the preload library of `jitherald run`, built
# with a sanitizer in BUILD (make asan, make tsan), under the VMs of tests/programs (the
# plain build's run_vm and run_harm: a VM is not built with our sanitizers). ASan: every
# mode, no report. TSan: data races and lock order among the VM's threads, which is where
# the preload now runs (hearing their writes, their page calls, fork and signals), and
# the library under it. No suppression: a report fails the run.
set -eu
B=$1 san=$2
R=$(cd "$(dirname "$0")/../.." && pwd)
P=$R/build/tests/programs
for v in run_vm run_harm; do
    [ -x "$P/$v" ] || { echo "FAIL  sanitize: $P/$v not built (make programs)"; exit 1; }
done
case $san in address) lib=libasan.so ;; thread) lib=libtsan.so ;; *) exit 2 ;; esac
lib=$(${CC:-cc} -print-file-name=$lib)
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 JITHERALD_DIR=$T/d
export TSAN_OPTIONS="die_after_fork=0 halt_on_error=1 exitcode=66"
modes=("run_vm partial 16" "run_vm junk" "run_vm dump" "run_vm pieces 40" "run_vm pieces-other 40" "run_vm fork" "run_vm closefds"
       "run_vm race 500" "run_harm sigpage 500" "run_harm forkmap 100" "run_harm anonfds"
       "run_harm closefds" "run_harm reuse" "run_harm dontneed" "run_harm writev 2000"
       "run_harm errno" "run_harm dupover")
# exit() from a signal handler runs every destructor in the handler (the VM's choice):
# TSan reports each one's free() as signal-unsafe, so only ASan runs that one.
[ "$san" = address ] && modes+=("run_harm sigexit")
bad=0
for m in "${modes[@]}"; do
    if timeout 180 env LD_PRELOAD="$lib $R/$B/libjitherald-run.so" \
        JITHERALD_RUN=all "$P/"$m > "$T/out" 2>&1; then
        echo "PASS  preload/$san $m"
    else
        echo "FAIL  preload/$san $m"; grep -v 'left as it is\|is not read' "$T/out" | head -40
        bad=1
    fi
done
exit $bad
