#!/usr/bin/env bash
# demo.sh — `make demo`: profile the demo JIT with perf and show that perf names the
# functions it compiled at run time.
#
#   $BUILD/examples/minijit compiles examples/minijit/fib.mini to x86-64 in memory and tells
#   jitherald about each function; with JITHERALD=perfmap, jitherald writes
#   /tmp/perf-<pid>.map, which `perf report` reads to turn JIT addresses into names.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
MINIJIT=$BUILD/examples/minijit
PROGRAM=$ROOT/examples/minijit/fib.mini

if [ -t 1 ]; then bold=$'\033[1m' plain=$'\033[0m'; else bold= plain=; fi
say() { printf '\n%s== %s%s\n' "$bold" "$*" "$plain"; }
die() { printf 'demo: %s\n' "$*" >&2; exit 1; }

[ -x "$MINIJIT" ] || die "$MINIJIT is missing: run 'make' first (or 'make demo', which builds it)"
command -v perf >/dev/null 2>&1 ||
    die "perf is not installed (Debian: apt-get install linux-perf; Ubuntu: linux-tools-\$(uname -r))"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/jitherald-demo.XXXXXX") || die "cannot create a temp dir"
trap 'rm -rf "$tmp"' EXIT

say "1. The program: a JIT-compiled recursive fib"
sed -n '/^fn/,$p' "$PROGRAM"

say "2. Run it under perf, with the perf map channel on"
echo "\$ JITHERALD=perfmap perf record -F 2000 -g -o perf.data minijit fib.mini"
if ! JITHERALD=perfmap perf record -F 2000 -g -o "$tmp/perf.data" "$MINIJIT" "$PROGRAM" \
        >"$tmp/out" 2>"$tmp/err"; then
    cat "$tmp/err" >&2
    paranoid=$(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null || echo '?')
    die "perf record failed (kernel.perf_event_paranoid = $paranoid). Profiling your own
      processes needs perf_event_paranoid <= 2 (sudo sysctl kernel.perf_event_paranoid=2);
      in a container, perf_event_open must be allowed by its seccomp profile."
fi
echo "fib(39) = $(cat "$tmp/out")"
grep -h 'Captured' "$tmp/err" || true

pid=$(perf script -i "$tmp/perf.data" -F pid 2>/dev/null | awk 'NF { print $1; exit }')
map=/tmp/perf-$pid.map
say "3. What jitherald wrote for perf: $map (one line per JIT function: start size name)"
if [ -n "$pid" ] && [ -r "$map" ]; then
    cat "$map"
else
    die "no perf map at $map: was the perfmap channel refused? (run with JITHERALD_DEBUG=1)"
fi

say "4. perf report: where the time went, by symbol"
echo "\$ perf report --stdio --no-children --sort dso,sym -g none"
perf report --stdio -i "$tmp/perf.data" --no-children --sort dso,sym -g none 2>/dev/null |
    grep -v '^#' | grep -v '^$' | head -8 | tee "$tmp/report"

say "5. ... and by call chain: JIT frames between C frames, walked through frame pointers"
# perf record -g walks frame pointers, which every function minijit emits keeps. The caller
# graph of fib's samples starts at libc and goes through minijit's C frames (file:line) into
# the JIT's main and fib (symbol+offset: the perf map has names, no lines).
echo "\$ perf report --stdio --no-children --sort dso,sym --symbols fib -g caller,0.5,caller,address"
perf report --stdio -i "$tmp/perf.data" --no-children --sort dso,sym --symbols fib \
        -g caller,0.5,caller,address 2>/dev/null | grep -v '^#' | grep -v '^[ |]*$' | head -14
echo "   ... (one fib frame per level of recursion)"
perf report --stdio -i "$tmp/perf.data" --no-children --sort sym -g folded,0,caller \
    2>/dev/null >"$tmp/chains"

if ! grep -q '\[\.\] fib' "$tmp/report"; then
    die "perf did not name 'fib': the perf map was not used (see above)"
fi
if ! grep -Eq '(^|;)mj_call;main;fib;fib(;|$)' "$tmp/chains"; then
    die "no call chain mj_call -> main -> fib -> fib: perf did not walk the JIT frames (see above)"
fi

say "6. For comparison, the same program without jitherald (JITHERALD=none)"
if JITHERALD=none perf record -F 2000 -g -o "$tmp/none.data" "$MINIJIT" "$PROGRAM" 32 \
        >/dev/null 2>&1; then
    perf report --stdio -i "$tmp/none.data" --no-children --sort dso,sym -g none 2>/dev/null |
        grep -v '^#' | grep -v '^$' | head -3
fi

cat <<EOF

${bold}== What you see${plain}
 - 'fib' and 'main' are functions minijit compiled at run time into anonymous memory.
   Without jitherald perf can only show their bare addresses (step 6).
 - perf found the names in $map, written by jitherald's perfmap channel as
   minijit announced each function with jh_code_add(). The map stays in /tmp after the
   process exits (perf reads it at report time); delete it when you are done.
 - The call chains (step 5) go from C (main.c, minijit.c) into the JIT's main and on through
   fib calling fib, because every function minijit emits keeps the standard frame-pointer
   prologue, which perf record -g walks.

Other channels, same binary, no rebuild (JITHERALD=a,b,... or JITHERALD=all):
  JITHERALD=jitdump   perf record -k 1 ...; perf inject --jit: names + source lines + annotate
  JITHERALD=gdb       gdb/lldb: 'break fib', 'bt' and 'list' in fib.mini, through the JIT interface
  JITHERALD=unwind    the process's own unwinder: C++ exceptions and backtrace() through JIT frames
  JITHERALD=elfmap    code pages re-mapped from ELF files: valgrind --tool=callgrind, perf annotate
  JITHERALD=auditlog  a flight recorder of every compile, read offline with 'jitherald log'
Try:  JITHERALD=gdb gdb -batch -ex 'set breakpoint pending on' -ex 'break fib' -ex run -ex bt --args $MINIJIT $PROGRAM 5
EOF
