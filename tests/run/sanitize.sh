#!/usr/bin/env bash
# tests/run/sanitize.sh BUILD address|thread — the preload library of `jitherald run`, built
# with a sanitizer in BUILD (make asan, make tsan), under tests/programs/run_vm (the plain
# build's: a VM is not built with our sanitizers). ASan: every mode, no report. TSan: the
# lock order of the guard, the library and fork; data races are not reported, because the
# VM hands code to the follower through a file (the perf map), which TSan cannot see as
# ordering the VM's writes of the code before the follower's reads of it.
set -eu
B=$1 san=$2
R=$(cd "$(dirname "$0")/../.." && pwd)
V=$R/build/tests/programs/run_vm
[ -x "$V" ] || { echo "sanitize: $V not built (make programs): skipped"; [ "${JH_REQUIRE_ALL:-0}" != 1 ]; exit; }
case $san in address) lib=libasan.so ;; thread) lib=libtsan.so ;; *) exit 2 ;; esac
lib=$(${CC:-cc} -print-file-name=$lib)
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
echo 'race:*' > "$T/supp"
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 JITHERALD_RUN_DRAIN=1 JITHERALD_DIR=$T/d
export TSAN_OPTIONS="die_after_fork=0 halt_on_error=1 exitcode=66 suppressions=$T/supp"
modes=("partial 16" junk dump fork closefds "race 500")
[ "$san" = thread ] && modes=("partial 16" fork "race 500")
bad=0
for m in "${modes[@]}"; do
    if timeout 120 env LD_PRELOAD="$lib $R/$B/libjitherald-run.so" \
        JITHERALD_RUN=all "$V" $m > "$T/out" 2>&1; then
        echo "PASS  preload/$san ${m%% *}"
    else
        echo "FAIL  preload/$san ${m%% *}"; grep -v 'left as it is\|is not read' "$T/out" | head -30
        bad=1
    fi
done
exit $bad
