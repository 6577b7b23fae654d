#!/usr/bin/env bash
# AddressSanitizer's report walks through JIT frames: a program built with
# -fsanitize=address reads freed memory in a host callback below five minijit frames. Its
# slow unwinder (_Unwind_Backtrace, what ASan uses for fatal reports unless told
# otherwise) must show the JIT frames and then `in main`. With the channel off the stack of
# the bad access must stop at the first JIT frame: the check can fail.
set -eu
: "${JH_BUILD:?}" "${JH_ROOT:?}"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/t.c" <<'EOF'
#include <stdlib.h>
#include <string.h>
#include "jitherald.h"
#include "minijit.h"

static const char *src =
    "fn d(x) {\n    return callback(x + 1) + 1\n}\n"
    "fn c(x) {\n    return d(x + 1) + 1\n}\n"
    "fn b(x) {\n    return c(x + 1) + 1\n}\n"
    "fn a(x) {\n    return b(x + 1) + 1\n}\n"
    "fn main() {\n    return a(1) + 1\n}\n";

__attribute__((noinline)) static int64_t use_after_free(int64_t x)
{
    volatile char *p = malloc(16);
    free((void *)p);
    return x + p[3];
}

int main(int argc, char **argv)
{
    mj_set_callback(use_after_free);
    jh_ctx *jh = NULL;
    struct jh_options o = { .sz = sizeof o,
                            .channels = argc > 1 && !strcmp(argv[1], "control") ? 0 : JH_UNWIND,
                            .flags = JH_OPT_IGNORE_ENV | JH_OPT_STRICT };
    if (jh_open(&jh, &o))
        return 2;
    char err[256];
    mj_program *p = mj_compile(src, "chain.mini", jh, err, sizeof err);
    if (!p)
        return 2;
    return (int)mj_run(p, "main", NULL, 0);
}
EOF
gcc -std=c11 -O1 -g -fno-omit-frame-pointer -fsanitize=address -D_GNU_SOURCE \
    -I"$JH_ROOT/include" -I"$JH_ROOT/examples/minijit" -o "$tmp/t" "$tmp/t.c" \
    "$JH_BUILD/libminijit.a" "$JH_BUILD/libjitherald.a" -lpthread -ldl

# The first stack of the report is the bad access: keep it up to its blank line.
access_stack() { sed -n '/READ of size/,/^$/p' "$1"; }
export ASAN_OPTIONS=fast_unwind_on_fatal=0:detect_leaks=0:symbolize=1
"$tmp/t" 2>"$tmp/on.txt" && { echo "FAIL: no ASan report"; exit 1; }
access_stack "$tmp/on.txt"
access_stack "$tmp/on.txt" | grep -q 'heap-use-after-free\|READ of size' || { echo "FAIL: no report"; cat "$tmp/on.txt"; exit 1; }
njit=$(access_stack "$tmp/on.txt" | grep -c '<unknown module>' || true)
access_stack "$tmp/on.txt" | grep -q ' in main ' || { echo "FAIL: the report's stack does not reach main"; exit 1; }
[ "$njit" -ge 5 ] || { echo "FAIL: $njit JIT frames in the report, expected 5"; exit 1; }

echo "-- control, channel off"
"$tmp/t" control 2>"$tmp/off.txt" || true
access_stack "$tmp/off.txt"
if access_stack "$tmp/off.txt" | grep -q ' in main '; then
    echo "FAIL: the control run's stack reaches main: the test cannot tell"; exit 1
fi
echo PASS
