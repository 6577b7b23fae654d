#!/usr/bin/env bash
# LLVM's libunwind (the unwinder of clang/libc++ programs; Debian libunwind-14) walks through
# JIT frames: a C program linked with it calls its _Unwind_Backtrace from below five minijit
# frames; the walk must pass d, c, b, a, main (minijit's) in order and reach our main. The
# channel must have chosen LLVM mode (__unw_add_dynamic_fde, one FDE per call). The same
# program with the channel off must stop at the first JIT frame: the check can fail.
set -eu
: "${JH_BUILD:?}" "${JH_ROOT:?}"
lib=
for f in /usr/lib/llvm-*/lib/libunwind.so.1 /usr/lib/x86_64-linux-gnu/libunwind.so.1; do
    [ -e "$f" ] && lib=$f && break
done
[ -n "$lib" ] || { echo "SKIP LLVM libunwind missing (Debian package libunwind-14)"; exit 77; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/t.c" <<'EOF'
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <unwind.h>
#include "jitherald.h"
#include "minijit.h"
#include "channels/unwind_stats.h"

static const char *src =
    "fn d(x) {\n    return callback(x + 1) + 1\n}\n"
    "fn c(x) {\n    return d(x + 1) + 1\n}\n"
    "fn b(x) {\n    return c(x + 1) + 1\n}\n"
    "fn a(x) {\n    return b(x + 1) + 1\n}\n"
    "fn main() {\n    return a(1) + 1\n}\n";
static const char *const order[] = { "d", "c", "b", "a", "main" };
static mj_program *prog;
static int next, reached_main, depth;
int main(int argc, char **argv);

static _Unwind_Reason_Code step(struct _Unwind_Context *uc, void *arg)
{
    (void)arg;
    uintptr_t pc = _Unwind_GetIP(uc);
    depth++;
    if (next < 5) {
        const struct mj_function *f = mj_function_get(prog, order[next]);
        if (pc > (uintptr_t)f->code && pc <= (uintptr_t)f->code + f->code_size)
            next++;
    }
    if (next == 5 && _Unwind_FindEnclosingFunction((void *)(pc - 1)) == (void *)main)
        reached_main = 1;
    return _URC_NO_REASON;
}

static int64_t cb(int64_t x)
{
    next = reached_main = depth = 0;
    _Unwind_Backtrace(step, NULL);
    return x;
}

int main(int argc, char **argv)
{
    Dl_info di;
    if (!dladdr((void *)_Unwind_Backtrace, &di) || !strstr(di.dli_fname, "libunwind.so.1")) {
        printf("_Unwind_Backtrace comes from %s, not LLVM's libunwind\n", di.dli_fname);
        return 2;
    }
    mj_set_callback(cb);
    jh_ctx *jh = NULL;
    int control = argc > 1 && !strcmp(argv[1], "control");
    struct jh_options o = { .sz = sizeof o, .channels = control ? 0 : JH_UNWIND,
                            .flags = JH_OPT_IGNORE_ENV | JH_OPT_STRICT };
    if (jh_open(&jh, &o))
        return 2;
    struct jh__unwind_stats st;
    jh__unwind_get_stats(&st);
    if (!control && st.mode != JH__UW_LLVM) {
        printf("channel mode %d, expected LLVM (%d)\n", st.mode, JH__UW_LLVM);
        return 2;
    }
    int r = 0;
    for (int round = 0; round < 2; round++) {   /* again after re-adding at the same place */
        char err[256];
        prog = mj_compile(src, "chain.mini", jh, err, sizeof err);
        if (!prog) {
            fprintf(stderr, "compile: %s\n", err);
            return 2;
        }
        mj_run(prog, "main", NULL, 0);
        printf("round %d: %d frames, %d of 5 JIT frames in order, main %s\n", round, depth,
               next, reached_main ? "reached" : "NOT reached");
        r |= next != 5 || !reached_main;
        mj_free(prog);
    }
    jh_close(jh);
    return r;
}
EOF
gcc -std=c11 -O1 -g -fno-omit-frame-pointer -D_GNU_SOURCE -I"$JH_ROOT/include" -I"$JH_ROOT/src" \
    -I"$JH_ROOT/examples/minijit" -o "$tmp/t" "$tmp/t.c" "$JH_BUILD/libminijit.a" \
    "$JH_BUILD/libjitherald.a" "$lib" -Wl,-rpath,"$(dirname "$lib")" -lpthread -ldl

echo "-- with JH_UNWIND"
"$tmp/t" || { echo "FAIL: LLVM libunwind does not walk through the JIT frames"; exit 1; }
echo "-- control, channel off (must stop at the first JIT frame)"
if "$tmp/t" control; then
    echo "FAIL: the control run passed: the test cannot tell"; exit 1
fi
echo PASS
